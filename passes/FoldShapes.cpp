// fold-shapes: replaces shape arithmetic by its result.
//
// After shape inference, every small integer value whose elements are known
// (as constants or as dims of the function's arguments) becomes a `constant`
// or a `dims() {value = shape<...>}` op, one op per distinct value; the
// Shape/Gather/Unsqueeze/Concat chains that computed it die and are erased.
// Then ops whose operands are all small constants are evaluated with the
// reference interpreter (float arithmetic the symbolic values do not model).
// Both steps feed each other, so they repeat until nothing changes.
#include "compiler/interp/Interpreter.h"
#include "compiler/ir/ShapeInference.h"
#include "passes/Passes.h"

#include <map>
#include <set>
#include <tuple>

namespace genc {

namespace {

constexpr int64_t kMaxFoldedElements = 64;

// Symbols the interpreter and the runtime can bind: bare dims of arguments.
std::set<std::string> bindableSymbols(const Function &f) {
  std::set<std::string> s;
  for (auto &a : f.arguments())
    for (auto &d : a->shape())
      if (d.isSymbol())
        s.insert(d.symbolName());
  return s;
}

bool isConstantValue(const SymbolicValue &v) {
  for (auto &d : v)
    if (!d.isConstant())
      return false;
  return true;
}

class Folder {
public:
  Folder(Module &m, Function &f) : m_(m), f_(f) {}

  /// One round of both steps; returns whether the function changed.
  llvm::Expected<bool> round() {
    ShapeInference si(m_);
    if (auto e = si.run(f_))
      return std::move(e);
    bindable_ = bindableSymbols(f_); // after run() renamed unified symbols
    bool changed = foldSymbolicValues(si);
    changed |= foldConstantOps();
    eraseDead();
    return changed;
  }

private:
  using Key = std::tuple<int, int64_t, SymbolicValue>; // dtype, rank, elements

  bool representable(const Value *v, const SymbolicValue &val) const {
    if (isConstantValue(val))
      return true;
    if (v->dtype() != DType::I64 && v->dtype() != DType::I32)
      return false;
    for (auto &d : val)
      for (auto &s : d.symbols())
        if (!bindable_.count(s))
          return false;
    return true;
  }

  // Inserts the op(s) computing `val` as v's type before `pos`.
  Value *materialize(const Value *v, const SymbolicValue &val, Function::OpList::iterator pos) {
    const Type &t = v->type();
    std::string loc = v->definingOp() ? v->definingOp()->loc() : "";
    if (isConstantValue(val)) {
      std::vector<int64_t> shape;
      if (t.rank() == 1)
        shape.push_back(static_cast<int64_t>(val.size()));
      Tensor tensor(t.dtype, shape);
      for (size_t i = 0; i < val.size(); ++i)
        tensor.setInt(static_cast<int64_t>(i), val[i].constant());
      Op *c = f_.insertBefore(pos, std::make_unique<Op>("constant", std::vector<Value *>{},
                                                        std::vector<Type>{t}, loc));
      c->setAttr("value", std::move(tensor));
      return c->result();
    }
    Type i64 = t;
    i64.dtype = DType::I64;
    Op *d = f_.insertBefore(pos, std::make_unique<Op>("dims", std::vector<Value *>{},
                                                      std::vector<Type>{i64}, loc));
    d->setAttr("value", DimList{val});
    if (t.dtype == DType::I64)
      return d->result();
    Op *c = f_.insertBefore(pos, std::make_unique<Op>("cast", std::vector<Value *>{d->result()},
                                                      std::vector<Type>{t}, loc));
    c->setAttr("to", std::string(dtypeName(t.dtype)));
    return c->result();
  }

  // What materialize() makes: constant, dims, and cast(dims) for i32.
  static bool isMaterialized(const Op &op) {
    if (op.is("constant") || op.is("dims"))
      return true;
    const Op *def = op.is("cast") ? op.operand(0)->definingOp() : nullptr;
    return def && def->is("dims");
  }

  // The value for `key`: an earlier one, else made before `pos`.
  Value *valueFor(const Value *like, const SymbolicValue &val, Function::OpList::iterator pos) {
    Key key{static_cast<int>(like->dtype()), like->rank(), val};
    auto found = seen_.find(key);
    if (found != seen_.end())
      return found->second;
    return seen_[key] = materialize(like, val, pos);
  }

  // A reshape or expand whose result shape is known gets exactly that shape
  // as its target (no -1, 0 or broadcast 1 left for later passes to decode).
  bool pinTarget(Op &op, Function::OpList::iterator pos, const ShapeInference &si) {
    if (!op.is("reshape") && !op.is("expand"))
      return false;
    const Shape &out = op.result()->shape();
    for (auto &d : out)
      if (d.isConstant() && d.constant() <= 0)
        return false; // a 0 in a reshape target would copy, not mean 0
    SymbolicValue want(out.begin(), out.end());
    Value *target = op.operand(1);
    if (target->dtype() != DType::I64 || !representable(target, want))
      return false;
    if (auto cur = si.symbolicValue(target); cur && *cur == want)
      return false;
    op.setOperand(1, valueFor(target, want, pos));
    if (Op *def = target->definingOp())
      dead_.push_back(def);
    return true;
  }

  bool foldSymbolicValues(const ShapeInference &si) {
    bool changed = false;
    auto &seen = seen_;
    seen.clear();
    for (auto it = f_.ops().begin(); it != f_.ops().end(); ++it) {
      Op *op = it->get();
      changed |= pinTarget(*op, it, si);
      for (Value *r : op->results()) {
        auto val = si.symbolicValue(r);
        if (!val || !representable(r, *val))
          continue;
        Key key{static_cast<int>(r->dtype()), r->rank(), *val};
        auto found = seen.find(key);
        if (found == seen.end() && isMaterialized(*op)) {
          seen[key] = r; // already as folded as it gets
          continue;
        }
        if (!f_.hasUses(r))
          continue;
        Value *with = found != seen.end() ? found->second : materialize(r, *val, it);
        seen[key] = with;
        f_.replaceAllUses(r, with);
        dead_.push_back(op);
        changed = true;
      }
    }
    return changed;
  }

  static bool isSmallConstant(const Value *v) {
    const Op *def = v->definingOp();
    return def && def->is("constant") && def->tensorAttr("value") &&
           def->tensorAttr("value")->numElements() <= kMaxFoldedElements;
  }

  // Evaluates `op` on its constant operands; nullopt where the interpreter
  // cannot (an error, or an answer that disagrees with the inferred types).
  std::optional<std::vector<Tensor>> evaluate(const Op &op) {
    Module tmp;
    Function *g = tmp.addFunction("fold");
    std::vector<Value *> operands;
    for (Value *v : op.operands()) {
      const Op *def = v->definingOp();
      Op *c = g->append(std::make_unique<Op>("constant", std::vector<Value *>{},
                                             std::vector<Type>{v->type()}));
      c->setAttr("value", *def->tensorAttr("value"));
      operands.push_back(c->result());
    }
    std::vector<Type> types;
    for (Value *r : op.results())
      types.push_back(r->type());
    Op *clone = g->append(std::make_unique<Op>(op.kind(), operands, types, op.loc()));
    for (auto &[name, attr] : op.attrs())
      clone->setAttr(name, attr);
    for (size_t i = 0; i < clone->numResults(); ++i)
      g->addOutput("r" + std::to_string(i), clone->result(i));
    auto out = interpret(tmp, *g, {});
    if (!out) {
      llvm::consumeError(out.takeError());
      return std::nullopt;
    }
    if (out->size() != op.numResults())
      return std::nullopt;
    for (size_t i = 0; i < out->size(); ++i) {
      // The interpreter computes in f32 / i64 / bool (already rounded or
      // wrapped to the op's type); store what the op says.
      Tensor &t = (*out)[i];
      DType want = op.result(i)->dtype();
      if (t.dtype() != want) {
        bool sameClass = isFloat(t.dtype()) ? isFloat(want) : isInteger(t.dtype()) && isInteger(want);
        if (!sameClass)
          return std::nullopt;
        t = t.castTo(want);
      }
      auto shape = constantShape(op.result(i)->shape());
      if (!shape || *shape != t.shape())
        return std::nullopt;
    }
    return std::move(*out);
  }

  bool foldConstantOps() {
    bool changed = false;
    for (auto it = f_.ops().begin(); it != f_.ops().end(); ++it) {
      Op *op = it->get();
      if (op->numOperands() == 0 || op->is("constant") || op->is("dims"))
        continue;
      bool foldable = true;
      for (Value *v : op->operands())
        foldable &= isSmallConstant(v);
      for (Value *r : op->results()) {
        auto shape = constantShape(r->shape());
        foldable &= shape && numElements(r->shape()).constant() <= kMaxFoldedElements &&
                    f_.hasUses(r);
      }
      if (!foldable)
        continue;
      auto values = evaluate(*op);
      if (!values)
        continue;
      for (size_t i = 0; i < values->size(); ++i) {
        Op *c = f_.insertBefore(it, std::make_unique<Op>("constant", std::vector<Value *>{},
                                                         std::vector<Type>{op->result(i)->type()},
                                                         op->loc()));
        c->setAttr("value", std::move((*values)[i]));
        f_.replaceAllUses(op->result(i), c->result());
      }
      dead_.push_back(op);
      changed = true;
    }
    return changed;
  }

  // Erases the folded ops and, transitively, what only they used.
  void eraseDead() {
    std::set<Op *> erased;
    while (!dead_.empty()) {
      Op *op = dead_.back();
      dead_.pop_back();
      if (erased.count(op))
        continue;
      bool used = false;
      for (Value *r : op->results())
        used |= f_.hasUses(r);
      if (used)
        continue;
      for (Value *v : op->operands())
        if (Op *def = v->definingOp())
          dead_.push_back(def);
      erased.insert(op);
      f_.erase(op);
    }
  }

  Module &m_;
  Function &f_;
  std::set<std::string> bindable_;
  std::vector<Op *> dead_;
  std::map<Key, Value *> seen_; // one folded op per distinct value
};

} // namespace

llvm::Error foldShapesPass(Module &m) {
  for (auto &f : m.functions()) {
    Folder folder(m, *f);
    // Each round removes ops, so this ends; the cap only bounds the work.
    for (int i = 0; i < 16; ++i) {
      auto changed = folder.round();
      if (!changed)
        return changed.takeError();
      if (!*changed)
        break;
    }
  }
  return llvm::Error::success();
}

} // namespace genc
