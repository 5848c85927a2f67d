// Runs a list of passes over a module, verifying after each and printing the
// IR where asked (--print-ir-after=PASS, --print-ir-after-all).
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace genc {

struct PipelineOptions {
  std::set<std::string> printAfter;
  bool printAfterAll = false;
  std::ostream *printStream = nullptr; // where --print-ir-after goes
  /// Gets (pass, seconds) for each pass run (--time-report).
  std::vector<std::pair<std::string, double>> *timings = nullptr;
};

/// Runs `passes` in order. An unknown pass name is an error listing the known ones.
llvm::Error runPipeline(Module &m, const std::vector<std::string> &passes,
                        const PipelineOptions &opts);

} // namespace genc
