// The driver of shape inference: per-op dispatch, symbol unification and the
// final rewrite of a function's types. The rules live in ShapeRules*.cpp.
#include "compiler/ir/ShapeInference.h"

#include "compiler/ir/OpDefs.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/ShapeRules.h"

#include <algorithm>
#include <limits>

namespace genc {

static llvm::Error makeError(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

bool tracksValues(const Type &t) {
  if (t.dtype != DType::I64 && t.dtype != DType::I32 && t.dtype != DType::Bool)
    return false;
  if (t.rank() == 0)
    return true;
  return t.rank() == 1 && t.shape[0].isConstant() && t.shape[0].constant() >= 0 &&
         t.shape[0].constant() <= kMaxTrackedElements;
}

std::optional<SymbolicValue> tensorValue(const Tensor &t) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32 && t.dtype() != DType::Bool)
    return std::nullopt;
  if (t.rank() > 1 || t.numElements() > kMaxTrackedElements || !t.valid())
    return std::nullopt;
  SymbolicValue v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(Dim(t.getInt(i)));
  return v;
}

// Values whose elements are in the IR itself: constants, dims ops and weights
// with data. Shape inference may not have seen them (an op made by a pass).
static std::optional<SymbolicValue> intrinsicValue(const Value *v) {
  if (!tracksValues(v->type()))
    return std::nullopt;
  if (v->isWeight())
    return v->data() ? tensorValue(*v->data()) : std::nullopt;
  const Op *def = v->definingOp();
  if (!def)
    return std::nullopt;
  if (def->is("constant")) {
    if (const Tensor *t = def->tensorAttr("value"))
      return tensorValue(*t);
  } else if (def->is("dims")) {
    if (auto *a = def->attr("value"))
      if (auto *dl = std::get_if<DimList>(a))
        return dl->dims;
  }
  return std::nullopt;
}

std::optional<SymbolicValue> ShapeInference::symbolicValue(const Value *v) const {
  if (!v)
    return std::nullopt;
  SymbolicValue r;
  auto it = values_.find(v);
  if (it != values_.end()) {
    r = it->second;
  } else if (auto iv = intrinsicValue(v)) {
    r = *iv;
  } else {
    return std::nullopt;
  }
  for (auto &d : r)
    d = canonical(d);
  return r;
}

Dim ShapeInference::canonical(const Dim &d) const {
  return bound_.empty() ? d : d.substitute(bound_);
}

Shape ShapeInference::canonical(const Shape &s) const {
  Shape r = s;
  for (auto &d : r)
    d = canonical(d);
  return r;
}

void ShapeInference::noteFunction(const Function &f) {
  if (noted_ == &f && notedArgs_ == f.arguments().size())
    return;
  noted_ = &f;
  notedArgs_ = f.arguments().size();
  argSymbols_.clear();
  for (auto &a : f.arguments())
    for (auto &d : a->shape())
      for (auto &s : d.symbols())
        argSymbols_.emplace(s, argSymbols_.size());
}

size_t ShapeInference::symbolRank(const std::string &sym) const {
  auto it = argSymbols_.find(sym);
  if (it != argSymbols_.end())
    return it->second;
  // Symbols only seen inside the function come after the arguments', and
  // made-up ones last, so they are the ones renamed away.
  return fresh_.count(sym) ? std::numeric_limits<size_t>::max()
                           : std::numeric_limits<size_t>::max() - 1;
}

Dim ShapeInference::freshSymbol() {
  for (;;) {
    std::string name = "unk" + std::to_string(nextFresh_++);
    if (argSymbols_.count(name) || bound_.count(name) || fresh_.count(name))
      continue;
    fresh_.insert(name);
    return Dim::symbol(name);
  }
}

void ShapeInference::bind(const std::string &sym, const Dim &to) {
  std::map<std::string, Dim> one{{sym, to}};
  for (auto &entry : bound_)
    entry.second = entry.second.substitute(one);
  bound_[sym] = to;
}

bool ShapeInference::unify(const Dim &a, const Dim &b) {
  if (a == b)
    return true;
  if (a.isSymbol() && b.isSymbol()) {
    const std::string &x = a.symbolName(), &y = b.symbolName();
    size_t rx = symbolRank(x), ry = symbolRank(y);
    if (rx < ry || (rx == ry && x < y))
      bind(y, a);
    else
      bind(x, b);
    return true;
  }
  // An argument's symbol stays a bare symbol (the interpreter and runtime bind
  // it from input shapes); only a made-up one may stand for an expression.
  auto tryBind = [&](const Dim &s, const Dim &e) {
    if (!s.isSymbol() || !fresh_.count(s.symbolName()))
      return false;
    auto syms = e.symbols();
    if (std::find(syms.begin(), syms.end(), s.symbolName()) != syms.end())
      return false;
    bind(s.symbolName(), e);
    return true;
  };
  return tryBind(a, b) || tryBind(b, a);
}

llvm::Error ShapeInference::inferOp(Op &op) {
  const std::string &kind = op.kind();
  const OpDef *def = lookupOp(kind);
  if (!def)
    return makeError("unknown op kind '" + kind + "'");
  int n = static_cast<int>(op.numOperands());
  if (n < def->minOperands || (def->maxOperands >= 0 && n > def->maxOperands))
    return makeError(kind + ": has " + std::to_string(n) + " operands");
  int r = static_cast<int>(op.numResults());
  if (r < def->minResults || (def->maxResults >= 0 && r > def->maxResults))
    return makeError(kind + ": has " + std::to_string(r) + " results");
  for (size_t i = 0; i < op.numOperands(); ++i)
    if (!op.operand(i))
      return makeError(kind + ": operand " + std::to_string(i) + " is null");
  if (op.parent())
    noteFunction(*op.parent());
  for (auto *res : op.results())
    values_.erase(res);
  ShapeRules rules{*this, op};
  if (auto e = rules.inferTypes())
    return e;
  rules.inferValues();
  return llvm::Error::success();
}

llvm::Error ShapeInference::inferAll(Function &f) {
  size_t number = 0; // the printer's result numbering, to point at the op
  for (auto &op : f.ops()) {
    if (auto e = inferOp(*op)) {
      std::string where = "@" + f.name() + ": %" + std::to_string(number);
      if (!op->loc().empty())
        where += " (" + quoteString(op->loc()) + ")";
      return makeError(where + ": " + llvm::toString(std::move(e)));
    }
    number += op->numResults();
  }
  return llvm::Error::success();
}

void ShapeInference::dropFresh() {
  for (auto it = bound_.begin(); it != bound_.end();) {
    bool mentionsFresh = fresh_.count(it->first) != 0;
    for (auto &s : it->second.symbols())
      mentionsFresh |= fresh_.count(s) != 0;
    it = mentionsFresh ? bound_.erase(it) : std::next(it);
  }
  fresh_.clear();
  nextFresh_ = 0;
  values_.clear();
}

void ShapeInference::rewriteTypes(Function &f) {
  auto rewrite = [&](Value *v) {
    Type t = v->type();
    t.shape = canonical(t.shape);
    v->setType(std::move(t));
  };
  for (auto &a : f.arguments())
    rewrite(a.get());
  for (auto &op : f.ops()) {
    for (auto *res : op->results())
      rewrite(res);
    std::vector<std::pair<std::string, Shape>> dimAttrs;
    for (auto &[name, attr] : op->attrs())
      if (auto *dl = std::get_if<DimList>(&attr))
        dimAttrs.push_back({name, canonical(dl->dims)});
    for (auto &[name, dims] : dimAttrs)
      op->setAttr(name, DimList{dims});
  }
  for (auto &[v, val] : values_)
    for (auto &d : val)
      d = canonical(d);
}

llvm::Error ShapeInference::run(Function &f) {
  noted_ = nullptr;
  noteFunction(f);
  // A unification found late can sharpen earlier ops (a -1 in a reshape that
  // needed the two batch names to agree), so infer again while the argument
  // symbols' unification changes. Each pass unifies at least one more pair,
  // so this ends; the cap only bounds the work.
  for (int pass = 0; pass < 4; ++pass) {
    dropFresh();
    auto before = bound_;
    if (auto e = inferAll(f))
      return e;
    auto after = bound_;
    for (auto &s : fresh_)
      after.erase(s);
    if (after == before)
      break;
  }
  rewriteTypes(f);
  return llvm::Error::success();
}

} // namespace genc
