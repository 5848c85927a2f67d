// Result types of ops from operand types, with symbolic dims.
//
// Small integer tensors that hold shapes (Shape -> Gather -> Concat -> ...)
// are tracked as lists of Dims ("symbolic values"), so a Reshape whose target
// comes from the input's own shape gets a symbolic result shape. When two
// different symbols must be equal (broadcasting s43 against s72, as dynamo
// exports name one batch twice), they are unified and the function is
// rewritten with one name.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <vector>

namespace genc {

/// Element values of a small integer tensor, as dims; known when every element
/// is a constant or a symbolic dim expression.
using SymbolicValue = std::vector<Dim>;

class ShapeInference {
public:
  explicit ShapeInference(const Module &m) : module_(m) {}
  /// Infers the result types of every op of `f` in order, overwriting them;
  /// then applies symbol unification to all types in `f`.
  llvm::Error run(Function &f);
  /// Infers one op's result types from its operands' (already inferred) types.
  llvm::Error inferOp(Op &op);
  /// The symbolic value of an integer value, if known.
  std::optional<SymbolicValue> symbolicValue(const Value *v) const;

private:
  const Module &module_;
  std::map<const Value *, SymbolicValue> values_;
  std::map<std::string, std::string> unified_; // symbol -> representative
  friend struct ShapeRules;
};

} // namespace genc
