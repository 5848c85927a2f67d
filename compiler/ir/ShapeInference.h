// Result types of ops from operand types, with symbolic dims.
//
// Small integer tensors that hold shapes (Shape -> Gather -> Concat -> ...)
// are tracked as lists of Dims ("symbolic values"), so a Reshape whose target
// comes from the input's own shape gets a symbolic result shape. When two
// different symbols must be equal (broadcasting s43 against s72, as dynamo
// exports name one batch twice), they are unified and the function is
// rewritten with one name.
//
// Extents that cannot be known statically (a Reshape to a data-dependent
// shape, say) get fresh symbols `unk0`, `unk1`, ...; a fresh symbol that later
// has to equal some dim is bound to it.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <set>
#include <string>
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
  /// `d` with every unified or bound symbol replaced by what it stands for.
  Dim canonical(const Dim &d) const;
  Shape canonical(const Shape &s) const;

private:
  friend struct ShapeRules;
  /// Records that `a` and `b` (canonical, different, not both constant) are
  /// equal, if that can be expressed: two symbols (the one the function's
  /// arguments name first is kept), or a fresh symbol and any dim not
  /// containing it. Returns false when nothing was recorded.
  bool unify(const Dim &a, const Dim &b);
  void bind(const std::string &sym, const Dim &to);
  /// Lower is preferred as the representative of unified symbols.
  size_t symbolRank(const std::string &sym) const;
  Dim freshSymbol();
  /// Learns the argument symbols of `f` (preference order, names in use).
  void noteFunction(const Function &f);
  llvm::Error inferAll(Function &f);
  void rewriteTypes(Function &f);
  /// Forgets fresh symbols and what was bound to them (before a new pass).
  void dropFresh();

  const Module &module_;
  std::map<const Value *, SymbolicValue> values_;
  /// symbol -> the dim it equals. Values never mention a key (kept resolved),
  /// so one substitution canonicalizes.
  std::map<std::string, Dim> bound_;
  std::set<std::string> fresh_;
  /// Symbols of the arguments' types, by first appearance.
  std::map<std::string, size_t> argSymbols_;
  const Function *noted_ = nullptr;
  size_t notedArgs_ = 0;
  unsigned nextFresh_ = 0;
};

} // namespace genc
