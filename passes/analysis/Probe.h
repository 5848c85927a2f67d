// Probe inputs for classifying subgraphs by evaluation.
//
// A probe binds every symbolic dim of the function's arguments and fills the
// arguments: token ids random, attention masks with a known padding pattern,
// float inputs random. Subgraphs that depend only on shapes and masks are then
// run in the reference interpreter and their values compared with hypotheses.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <map>
#include <random>
#include <string>
#include <vector>

namespace genc {

struct Probe {
  std::map<std::string, int64_t> symbols; // symbol -> size
  std::vector<Tensor> inputs;             // one per argument
  /// key padding per argument that is an attention mask: name -> [batch][len]
  std::map<std::string, std::vector<std::vector<int64_t>>> masks;
};

/// True for arguments that carry an attention mask (by the exporters' names).
bool isMaskArgument(const Value &arg);

struct ProbeSpec {
  int64_t batch = 3;
  int64_t length = 12;     // size of every non-batch symbol
  bool padded = true;      // rows 1.. get left / right padding in their masks
  uint64_t seed = 1;
};

/// Builds a probe for f: the first dim of every argument is the batch, every
/// other symbol has `length`. Errors if an argument's shape can't be bound.
llvm::Expected<Probe> makeProbe(const Function &f, const ProbeSpec &spec);

/// Evaluates `roots` of f on the probe (via a temporary slice function).
llvm::Expected<std::vector<Tensor>> evaluateOnProbe(Module &m, const Function &f,
                                                    const std::vector<const Value *> &roots,
                                                    const Probe &probe);

/// makeProbe + evaluateOnProbe for one value: its value on a fresh probe.
llvm::Expected<Tensor> evaluateWithProbe(Module &m, const Function &f, const Value *v,
                                         const ProbeSpec &spec);

} // namespace genc
