// Proves that a function is position-wise outside attention: no op other
// than the attention ops (kv_, cross_, packed_attention) mixes values of
// different tokens.
//
// Every value is given the axis along which tokens run (the dim that holds the
// `tokens` symbol). Each op is checked against what it does to that axis:
// elementwise ops keep it aligned; matmuls must not contract over it;
// reductions, softmax, norms, slices, splits and concats must not act along
// it; reshapes are allowed only between token-major layouts (all dims before
// the token dim are 1), where the flat order of tokens is unchanged.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <string>

namespace genc {

/// An error naming the first op that mixes tokens (its kind and location).
llvm::Error checkPositionWise(const Function &f, const std::string &tokenSymbol);

} // namespace genc
