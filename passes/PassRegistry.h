// The one list of passes. A pass is a named function over a module; the
// pipeline driver runs them by name (`--passes=a,b`).
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace genc {

struct PassInfo {
  const char *name;
  const char *summary;
  std::function<llvm::Error(Module &)> run;
};

const std::vector<PassInfo> &allPasses();
const PassInfo *lookupPass(const std::string &name);
/// "infer-shapes, fold-shapes, ...": for errors that name an unknown pass.
std::string knownPassNames();
/// What `genc compile` runs by default, in order.
std::vector<std::string> defaultPipeline();
/// The graph-level prefix of the default pipeline (everything before the plan
/// is derived): what `genc compile --emit=ir` shows by default, and what works
/// on any forward graph, generation model or not.
std::vector<std::string> graphPipeline();

} // namespace genc
