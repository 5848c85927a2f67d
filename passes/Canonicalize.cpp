// canonicalize: one form for each common computation, so later passes match
// one pattern instead of each exporter's spelling.
//
//   identity / dropout / same-dtype cast      -> dropped
//   cast(weight) to a float dtype             -> a weight of that dtype
//                                                (f16 weights of an f32 graph)
//   gemm(a, b, c)                             -> matmul(a, b') (+ c)
//   x * sigmoid(x)                            -> silu(x)
//   0.5 * x * (1 + erf(x / sqrt 2))           -> gelu(x) {approximate = "none"}
//   0.5 * x * (1 + tanh(c * (x + k * x^3)))   -> gelu(x) {approximate = "tanh"}
//   x * 1/sqrt(mean(x^2) + eps) [* w]         -> rms_norm(x, w)
//   gather_nd(x, constant idx[..., 1])        -> gather(x, idx[...]) {axis = 0}
//
// LayerNormalization is imported as layer_norm already. Each rewrite replaces
// the root value only; the operands it no longer needs die and are erased.
#include "compiler/ir/Builder.h"
#include "passes/Passes.h"
#include "passes/analysis/Match.h"

#include <cmath>
#include <set>

namespace genc {
namespace {

class Canonicalizer {
public:
  Canonicalizer(Module &m, Function &f) : m_(m), f_(f) {}

  bool runOnce() {
    bool changed = false;
    // Snapshot: rewrites insert ops, and erased ops must not be visited.
    std::vector<Op *> ops;
    for (auto &op : f_.ops())
      ops.push_back(op.get());
    for (Op *op : ops) {
      if (dead_.count(op))
        continue;
      changed |= dropNoOp(op) || foldWeightCast(op) || rewriteGemm(op) || rewriteSilu(op) || rewriteGeluErf(op) ||
                 rewriteGeluTanh(op) || rewriteRmsNorm(op) || rewriteGatherNd(op);
    }
    return changed;
  }

private:
  Value *insert(Op *before, const char *kind, std::vector<Value *> operands, Type type,
                std::map<std::string, Attribute> attrs = {}) {
    return insertOp(f_, before, kind, std::move(operands), std::move(type), std::move(attrs));
  }

  void replace(Value *from, Value *to) {
    f_.replaceAllUses(from, to);
    if (Op *d = from->definingOp()) {
      bool anyUse = false;
      for (auto *r : d->results())
        anyUse |= f_.hasUses(r);
      if (!anyUse) {
        dead_.insert(d);
        f_.erase(d);
      }
    }
  }

  bool dropNoOp(Op *op) {
    bool noop = op->is("identity") ||
                (op->is("cast") && op->strAttr("to") == dtypeName(op->operand(0)->dtype()));
    if (op->is("dropout"))
      noop = op->numResults() == 1 || !f_.hasUses(op->result(1));
    if (!noop)
      return false;
    replace(op->result(), op->operand(0));
    return true;
  }

  // An f32 graph that stores some weights as f16 casts them where they are
  // read (tools/gguf_to_onnx.py does): converted once here, not every step.
  bool foldWeightCast(Op *op) {
    if (!op->is("cast") || !op->operand(0)->isWeight() || !op->operand(0)->data())
      return false;
    Value *w = op->operand(0);
    auto to = parseDType(op->strAttr("to"));
    if (!to || !isFloat(*to) || !isFloat(w->dtype()))
      return false;
    std::string name = w->name() + "." + dtypeName(*to);
    Value *folded = m_.weight(name);
    if (!folded)
      folded = m_.addWeight(name, Type{*to, w->shape()}, std::make_shared<Tensor>(w->data()->castTo(*to)));
    replace(op->result(), folded);
    return true;
  }

  bool rewriteGemm(Op *op) {
    if (!op->is("gemm") || op->intAttr("trans_a", 0))
      return false;
    Value *a = op->operand(0), *b = op->operand(1);
    Type outType = op->result()->type();
    if (op->intAttr("trans_b", 0)) {
      if (b->rank() != 2)
        return false;
      Type bt{b->dtype(), {b->shape()[1], b->shape()[0]}};
      b = insert(op, "transpose", {b}, bt, {{"perm", std::vector<int64_t>{1, 0}}});
    }
    Value *r = insert(op, "matmul", {a, b}, outType);
    double alpha = op->floatAttr("alpha", 1.0), beta = op->floatAttr("beta", 1.0);
    if (alpha != 1.0)
      r = insert(op, "mul", {r, scalar(op, alpha, outType.dtype)}, outType);
    if (op->numOperands() == 3) {
      Value *c = op->operand(2);
      if (beta != 1.0)
        c = insert(op, "mul", {c, scalar(op, beta, c->dtype())}, c->type());
      r = insert(op, "add", {r, c}, outType);
    }
    replace(op->result(), r);
    return true;
  }

  Value *scalar(Op *before, double v, DType dt) {
    Tensor t(dt, {});
    t.setDouble(0, v);
    return insert(before, "constant", {}, Type{dt, {}}, {{"value", t}});
  }

  // torch.export writes x[-2] of a stacked tensor (Falcon's fused QKV heads)
  // as GatherND with a constant [[-2]]: a plain gather along axis 0, which the
  // later passes know (injective, position-wise).
  bool rewriteGatherNd(Op *op) {
    if (!op->is("gather_nd") || op->intAttr("batch_dims", 0) != 0)
      return false;
    Op *c = defOf(op->operand(1), "constant");
    const Tensor *idx = c ? c->tensorAttr("value") : nullptr;
    if (!idx || idx->rank() < 1 || idx->shape().back() != 1)
      return false;
    std::vector<int64_t> shape(idx->shape().begin(), idx->shape().end() - 1);
    Tensor flat(idx->dtype(), shape);
    for (int64_t i = 0; i < idx->numElements(); ++i)
      flat.setInt(i, idx->getInt(i));
    Shape dims;
    for (int64_t d : shape)
      dims.push_back(Dim(d));
    Value *k = insert(op, "constant", {}, Type{idx->dtype(), dims}, {{"value", flat}});
    replace(op->result(), insert(op, "gather", {op->operand(0), k}, op->result()->type(),
                                 {{"axis", int64_t(0)}}));
    return true;
  }

  bool rewriteSilu(Op *op) {
    if (!op->is("mul"))
      return false;
    for (int i = 0; i < 2; ++i) {
      Value *x = op->operand(i);
      Op *s = defOf(op->operand(1 - i), "sigmoid");
      if (s && s->operand(0) == x && x->type() == op->result()->type()) {
        replace(op->result(), insert(op, "silu", {x}, x->type()));
        return true;
      }
    }
    return false;
  }

  // From `p` (the 1 + erf/tanh(...) factor), climbs single-use muls to the
  // product whose leaves are exactly {p, x, 0.5}; returns that root value.
  Value *findHalfXProduct(Value *p, Value *x) {
    Value *v = p;
    for (int depth = 0; depth < 3; ++depth) {
      auto users = f_.users(v);
      if (users.size() != 1 || !users[0]->is("mul") || useCount(f_, v) != 1)
        return nullptr;
      v = users[0]->result();
      auto leaves = mulLeaves(f_, v);
      if (leaves.size() != 3)
        continue;
      bool hasP = false, hasX = false, hasHalf = false;
      for (Value *l : leaves) {
        if (l == p && !hasP)
          hasP = true;
        else if (l == x && !hasX)
          hasX = true;
        else if (isSplat(l, 0.5) && !hasHalf)
          hasHalf = true;
      }
      if (hasP && hasX && hasHalf)
        return v;
    }
    return nullptr;
  }

  // 1 + t, either operand order; returns the add's result.
  Value *onePlus(Value *t) {
    auto users = f_.users(t);
    if (users.size() != 1 || !users[0]->is("add"))
      return nullptr;
    auto c = splitConstOperand(users[0]);
    if (!c || c->other != t || c->value != 1.0)
      return nullptr;
    return users[0]->result();
  }

  bool rewriteGeluErf(Op *op) {
    if (!op->is("erf"))
      return false;
    Op *scale = op->operand(0)->definingOp();
    if (!scale)
      return false;
    Value *x = nullptr;
    if (scale->is("div") && isSplat(scale->operand(1), std::sqrt(2.0)))
      x = scale->operand(0);
    else if (scale->is("mul"))
      if (auto c = splitConstOperand(scale); c && std::fabs(c->value - M_SQRT1_2) < 1e-4)
        x = c->other;
    if (!x)
      return false;
    Value *p = onePlus(op->result());
    Value *root = p ? findHalfXProduct(p, x) : nullptr;
    if (!root || root->type() != x->type())
      return false;
    replace(root, insert(root->definingOp(), "gelu", {x}, x->type(),
                         {{"approximate", std::string("none")}}));
    return true;
  }

  bool rewriteGeluTanh(Op *op) {
    if (!op->is("tanh"))
      return false;
    Op *outer = defOf(op->operand(0), "mul");
    auto c1 = outer ? splitConstOperand(outer) : std::nullopt;
    if (!c1 || std::fabs(c1->value - std::sqrt(2.0 / M_PI)) > 1e-4)
      return false;
    Op *sum = defOf(c1->other, "add");
    if (!sum)
      return false;
    for (int i = 0; i < 2; ++i) {
      Value *x = sum->operand(i);
      Op *cube = defOf(sum->operand(1 - i), "mul");
      auto c2 = cube ? splitConstOperand(cube) : std::nullopt;
      if (!c2 || std::fabs(c2->value - 0.044715) > 1e-6)
        continue;
      Op *pw = defOf(c2->other, "pow");
      if (!pw || pw->operand(0) != x || !isSplat(pw->operand(1), 3.0))
        continue;
      Value *p = onePlus(op->result());
      Value *root = p ? findHalfXProduct(p, x) : nullptr;
      if (!root || root->type() != x->type())
        return false;
      replace(root, insert(root->definingOp(), "gelu", {x}, x->type(),
                           {{"approximate", std::string("tanh")}}));
      return true;
    }
    return false;
  }

  bool rewriteRmsNorm(Op *mean) {
    if (!mean->is("reduce_mean") || mean->intAttr("keepdims", 1) != 1)
      return false;
    auto axes = mean->intsAttr("axes");
    Value *sq = mean->operand(0);
    int64_t rank = sq->rank();
    if (axes.size() != 1 || (axes[0] != -1 && axes[0] != rank - 1))
      return false;
    Value *x = nullptr;
    if (Op *p = defOf(sq, "pow"); p && isSplat(p->operand(1), 2.0))
      x = p->operand(0);
    else if (Op *m = defOf(sq, "mul"); m && m->operand(0) == m->operand(1))
      x = m->operand(0);
    if (!x || !isFloat(x->dtype()))
      return false;
    auto addUsers = f_.users(mean->result());
    if (addUsers.size() != 1 || !addUsers[0]->is("add"))
      return false;
    auto eps = splitConstOperand(addUsers[0]);
    if (!eps || eps->other != mean->result())
      return false;
    auto sqrtUsers = f_.users(addUsers[0]->result());
    if (sqrtUsers.size() != 1 || !sqrtUsers[0]->is("sqrt"))
      return false;
    Value *s = sqrtUsers[0]->result();
    // x / s, or x * (1 / s) with the reciprocal spelled either way.
    Value *normed = nullptr;
    for (Op *u : f_.users(s)) {
      if (u->is("div") && u->operand(0) == x && u->operand(1) == s)
        normed = u->result();
      bool isInv = u->is("reciprocal") || (u->is("div") && u->operand(1) == s &&
                                            isSplat(u->operand(0), 1.0));
      if (isInv)
        for (Op *m : f_.users(u->result()))
          if (m->is("mul") && (m->operand(0) == x || m->operand(1) == x))
            normed = m->result();
    }
    if (!normed || normed->type() != x->type())
      return false;
    // An optional per-channel scale: mul(normed, w) with w of shape [d].
    Value *root = normed, *weight = nullptr;
    auto scaleUsers = f_.users(normed);
    if (scaleUsers.size() == 1 && scaleUsers[0]->is("mul") && useCount(f_, normed) == 1) {
      Op *m = scaleUsers[0];
      Value *w = m->operand(0) == normed ? m->operand(1) : m->operand(0);
      if (w->rank() == 1 && w->shape()[0] == x->shape().back() && w->dtype() == x->dtype() &&
          (w->isWeight() || defOf(w, "constant"))) {
        root = m->result();
        weight = w;
      }
    }
    Op *at = root->definingOp();
    if (!weight) {
      Tensor ones(x->dtype(), {0});
      auto d = x->shape().back();
      if (!d.isConstant())
        return false;
      ones = Tensor(x->dtype(), {d.constant()});
      for (int64_t i = 0; i < d.constant(); ++i)
        ones.setDouble(i, 1.0);
      weight = insert(at, "constant", {}, Type{x->dtype(), {d}}, {{"value", ones}});
    }
    replace(root, insert(at, "rms_norm", {x, weight}, x->type(),
                         {{"axis", int64_t(-1)}, {"epsilon", eps->value}}));
    return true;
  }

  Module &m_;
  Function &f_;
  std::set<Op *> dead_;
};

} // namespace

llvm::Error canonicalizePass(Module &m) {
  for (auto &f : m.functions()) {
    Canonicalizer c(m, *f);
    for (int i = 0; i < 8 && c.runOnce(); ++i) {
    }
    f->eraseDeadOps();
  }
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
