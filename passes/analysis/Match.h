// Small helpers for recognising op chains. Matching is structural but
// tolerant of operand order and of the constant forms exporters produce
// (scalar `constant`, a one-element weight, a splat tensor).
#pragma once
#include "compiler/ir/IR.h"

#include <optional>
#include <vector>

namespace genc {

/// The defining op of v if it has kind `kind`, else null.
Op *defOf(const Value *v, const char *kind);

/// The value of v when it is a constant (op or weight with data) whose
/// elements are all equal; nullopt otherwise.
std::optional<double> splatValue(const Value *v);
/// True when v is a splat constant within a relative 1e-4 of `expected`.
bool isSplat(const Value *v, double expected, double relTol = 1e-4);

/// For a commutative binary op with one splat-constant operand: the other
/// operand and the constant. nullopt if neither operand is a splat constant.
struct ConstOperand {
  Value *other;
  double value;
};
std::optional<ConstOperand> splitConstOperand(const Op *op);

/// The leaves of a tree of `mul` ops rooted at v: recursion enters an
/// operand's defining `mul` only when that value has exactly one use.
std::vector<Value *> mulLeaves(const Function &f, Value *v);

/// Number of uses of v in f (operands and outputs).
size_t useCount(const Function &f, const Value *v);

} // namespace genc
