// Creating ops inside passes.
#pragma once
#include "compiler/ir/IR.h"

namespace genc {

/// Inserts a one-result op before `before` (at the function's start when null),
/// located where `before` is, and returns its result.
Value *insertOp(Function &f, Op *before, const std::string &kind, std::vector<Value *> operands,
                Type type, std::map<std::string, Attribute> attrs = {});

} // namespace genc
