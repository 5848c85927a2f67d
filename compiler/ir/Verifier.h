// Structural checks on a module: every op is known and has the right arity,
// every operand is defined before use, outputs are defined, weight data
// matches the weight type.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

namespace genc {

llvm::Error verifyModule(const Module &m);
llvm::Error verifyFunction(const Function &f, const Module &m);

} // namespace genc
