// The reference interpreter: runs an IR function on the CPU, exactly in
// float32 (int64 / bool where the graph computes on them). It is the semantic
// reference for every pass: a pass is correct when the interpreter gives the
// same outputs before and after it.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace genc {

/// Runs `f` on `inputs` (one per argument, in order). Symbolic dims are bound
/// from the argument shapes; a mismatch (rank, dtype, an inconsistent symbol)
/// is an error naming the argument. Weights must carry data.
llvm::Expected<std::vector<Tensor>> interpret(const Module &m, const Function &f,
                                              const std::vector<Tensor> &inputs);

} // namespace genc
