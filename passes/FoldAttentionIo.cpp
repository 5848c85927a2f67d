// fold-attention-io: the attention op reads the packed projection and writes
// the merged heads, so the head split, RoPE and head merge are no kernels.
//
// After fuse-gemms, a layer's Q, K and V come out of one matmul X[1, T, W]
// (or [T, W]);
// between X and kv_attention / packed_attention / cross_attention sit a
// split, reshapes to [1, T, heads, D], transposes to [1, heads, T, D] and,
// for rotary models, x·cos[pos] + rotate(x)·sin[pos]. After the attention a
// transpose and a reshape give [1, T, heads·D] back. Like flash-attention's
// kvcache kernel, our attention kernel can do all of that itself: read head h
// of q at X[t, q_offset + h·D ...], rotate q and k in registers, and write
// its output token-major.
//
// The prologue is recognised by evaluation, not by its op sequence (the
// exporters spell rotate_half differently): the ops between X (and the
// `positions` argument) and the attention's q/k/v are run in the interpreter
// on random X and positions, and compared with each candidate reading: which
// column offset each of q, k, v starts at, an RMSNorm of q and k first (per
// head as in Qwen3, or over all heads as in OLMo2, with which weights), and
// RoPE "half" (rotate_half, GPT-NeoX/Llama) or "interleaved" (GPT-J) with
// which of the position tables gathered in that region as cos and sin. Only
// an exact reading folds; any other prologue (a scaled q, heads interleaved
// in X, a LayerNorm) stays as it was and `fuse` gives it a kernel. The epilogue (transpose + reshape to
// [1, T, heads·D]) is matched by structure.
//
// Remarks: each attention op folded (Passed, with the reading found), and a
// prologue or merge left as it was (Missed, with what stopped it).
//
// The folded op (docs/ir-ops.md):
//   kv_attention(X[, positions, cos, sin][, q_norm, k_norm][, bias])
//     {qkv_offsets = [q, k, v], rope = "half"|"interleaved", rotary_dim,
//      qk_norm_epsilon, merge_heads = 1, ...}
#include "compiler/interp/Interpreter.h"
#include "compiler/ir/Clone.h"
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "passes/analysis/Fusability.h"
#include "passes/analysis/PlanPrograms.h"
#include "passes/analysis/Probe.h"
#include "runtime/cpu/AttentionIo.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace genc {
namespace {

bool isAttention(const Op &op) {
  return op.is("kv_attention") || op.is("packed_attention") || op.is("cross_attention");
}

size_t numHeadOperands(const Op &att) { return att.is("cross_attention") ? 1 : 3; }

// ---- the prologue region ----------------------------------------------------

struct Region {
  std::set<Op *> ops;
  Value *x = nullptr;         // the packed projection [1, T, W]
  Value *positions = nullptr; // the `positions` argument, if the region reads it
};

// The fusable ops the head operands are computed by, back to non-fusable
// producers or arguments. Fails (saying why in `why`) unless those sources
// are one [1, T, W] f32 value (and `positions`), and no value computed from
// X escapes the region.
std::optional<Region> findRegion(Function &f, Op &att, std::string &why) {
  Region r;
  std::set<Value *> sources;
  std::function<void(Value *)> visit = [&](Value *v) {
    if (v->isWeight())
      return;
    Op *p = v->definingOp();
    if (p && (isFusable(*p) || isHostValue(*p))) {
      if (r.ops.insert(p).second)
        for (Value *o : p->operands())
          visit(o);
      return;
    }
    sources.insert(v);
  };
  size_t n = numHeadOperands(att);
  for (size_t i = 0; i < n; ++i)
    visit(att.operand(i));
  for (Value *s : sources) {
    if (s->isArgument() && s->name() == "positions") {
      r.positions = s;
    } else if (!r.x) {
      r.x = s;
    } else {
      why = "q, k and v are computed from more than one value (not one packed projection)";
      return std::nullopt;
    }
  }
  // X is [1, T, W] or [T, W] (GPT-2's Conv1D rows): the same memory.
  Value *tok = att.operand(0);
  if (!r.x || r.x->dtype() != DType::F32 || r.x->rank() < 2 || r.x->rank() > 3 ||
      (r.x->rank() == 3 && r.x->shape()[0] != Dim(1)) ||
      r.x->shape()[r.x->rank() - 2] != tok->shape()[2] || !r.x->shape().back().isConstant()) {
    why = r.x ? "the projection q, k and v come from is " + r.x->type().str() +
                    ", not f32 [1, tokens, W] with a constant W"
              : "q, k and v are not computed from a projection";
    return std::nullopt;
  }
  // Values that depend on X may be read only inside the region (or be the
  // head operands themselves, read only by the attention).
  std::set<Value *> fromX{r.x};
  std::set<Value *> heads(att.operands().begin(), att.operands().begin() + n);
  for (auto &op : f.ops()) {
    if (!r.ops.count(op.get()))
      continue;
    bool dep = false;
    for (Value *o : op->operands())
      dep |= fromX.count(o) > 0;
    if (!dep)
      continue;
    for (Value *res : op->results()) {
      fromX.insert(res);
      // A result the prologue does not read (the MLP half of a split that
      // also feeds q/k/v, say) may go elsewhere: the op stays for it anyway.
      bool inside = heads.count(res) > 0, outside = false;
      for (Op *u : f.users(res))
        (r.ops.count(u) ? inside : outside) |= !(u == &att && heads.count(res));
      for (auto &o : f.outputs())
        outside |= o.value == res;
      if (inside && outside) {
        why = "a value the prologue computes from the projection is also read outside it";
        return std::nullopt;
      }
    }
  }
  return r;
}

// ---- evaluating it ----------------------------------------------------------

struct Probed {
  Tensor x, positions;
  std::vector<Tensor> heads; // [1, n, T, D] each
};

std::optional<Probed> probeRegion(Module &m, Function &f, const Region &r, Op &att,
                                  int64_t positionLimit) {
  Function *pf = m.addFunction("__attention_io_probe");
  ValueMap map;
  map[r.x] = pf->addArgument("x", r.x->type());
  if (r.positions)
    map[r.positions] = pf->addArgument("positions", r.positions->type());
  auto get = [&](Value *v) { return v->isWeight() ? v : map.at(v); };
  for (auto &op : f.ops()) {
    if (!r.ops.count(op.get()))
      continue;
    std::vector<Value *> ops;
    for (Value *o : op->operands())
      ops.push_back(get(o));
    appendCopy(*pf, *op, ops, &map);
  }
  for (size_t i = 0; i < numHeadOperands(att); ++i)
    pf->addOutput("h" + std::to_string(i), get(att.operand(i)));

  std::optional<Probed> out;
  ProbeSpec spec;
  spec.length = 7;
  spec.seed = 17;
  if (auto probe = makeProbe(*pf, spec)) {
    if (r.positions) { // distinct positions inside the tables
      Tensor &p = probe->inputs[1];
      for (int64_t i = 0; i < p.numElements(); ++i)
        p.setInt(i, (i * 37 + 5) % positionLimit);
    }
    InterpretOptions opts;
    opts.checkResultTypes = false;
    if (auto vals = interpret(m, *pf, probe->inputs, opts)) {
      out = Probed{probe->inputs[0], r.positions ? probe->inputs[1] : Tensor(), std::move(*vals)};
    } else {
      llvm::consumeError(vals.takeError());
    }
  } else {
    llvm::consumeError(probe.takeError());
  }
  m.removeFunction(pf);
  return out;
}

// ---- candidate readings -----------------------------------------------------

struct Rope {
  std::string mode;           // "", "half", "interleaved"
  Value *cos = nullptr, *sin = nullptr;
  int64_t dim = 0;            // rotary_dim: the table width
};

// An RMSNorm of q or k before the rotation (Qwen3: per head, weight [D];
// OLMo2: over all of the operand's heads, weight [heads·D]). The weight is a
// module weight or a constant op (an all-ones weight may arrive folded).
struct Norm {
  Value *weight = nullptr;
  const Tensor *data = nullptr;
  float eps = 0.f;
};

const Tensor *constantData(Value *v) {
  if (v->isWeight())
    return v->data();
  Op *c = v->definingOp();
  return c && c->is("constant") ? c->tensorAttr("value") : nullptr;
}

// Whether head operand `h` is what the runtime unpacks from X for head j at
// column off + j·D, normalised and rotated as `norm` and `rope` say: the
// pass folds only a reading whose arithmetic the executor repeats.
bool matches(const Probed &p, const Tensor &h, int64_t off, int64_t D, const Rope &rope,
             const Norm &norm) {
  int64_t n = h.shape()[1], W = p.x.shape().back();
  if (h.shape()[3] != D || off + n * D > W)
    return false;
  if (norm.data && norm.data->numElements() != D && norm.data->numElements() != n * D)
    return false;
  genrt::cpu::HeadReading reading{off, n, D, rope.mode, rope.dim,
                                  rope.mode.empty() ? nullptr : &p.positions,
                                  rope.cos ? rope.cos->data() : nullptr,
                                  rope.sin ? rope.sin->data() : nullptr, norm.data, norm.eps};
  Tensor want(DType::F32, h.shape());
  genrt::cpu::unpackHeads(p.x, reading, want);
  const float *w = want.data<float>(), *g = h.data<float>();
  for (int64_t i = 0; i < want.numElements(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= 1e-5f * (1.f + std::fabs(w[i]))))
      return false;
  return true;
}

std::optional<int64_t> findOffset(const Probed &p, const Tensor &h, int64_t D, const Rope &rope,
                                  const Norm &norm = {}) {
  int64_t W = p.x.shape().back();
  for (int64_t off = 0; off + D <= W; off += D)
    if (matches(p, h, off, D, rope, norm))
      return off;
  return std::nullopt;
}

// Readings to try for the norm of q and k: none, then each 1-D f32 weight the
// region's rms_norm ops or multiplies read, with the epsilon of its rms_norm
// ops (one for all).
std::vector<Norm> normCandidates(const Region &r, int64_t D) {
  std::vector<Norm> out{Norm{}};
  std::optional<double> eps;
  for (Op *op : r.ops)
    if (op->is("rms_norm")) {
      double e = op->floatAttr("epsilon", 1e-5);
      if (eps && *eps != e)
        return out;
      eps = e;
    }
  if (!eps)
    return out;
  // rms_norm(x, w), or rms_norm(x, ones) · w as canonicalize writes an
  // explicit multiply: either way x · inv · w.
  for (Op *op : r.ops)
    if (op->is("mul") || op->is("rms_norm"))
      for (Value *w : op->operands()) {
        const Tensor *d = constantData(w);
        if (d && d->dtype() == DType::F32 && d->rank() == 1 && d->numElements() % D == 0 &&
            std::none_of(out.begin(), out.end(), [&](const Norm &n) { return n.weight == w; }))
          out.push_back(Norm{w, d, static_cast<float>(*eps)});
      }
  return out;
}

// Readings to try for q and k: none, then each mode over each ordered pair
// of f32 [P, R] tables the region gathers by position.
std::vector<Rope> ropeCandidates(const Region &r, int64_t D) {
  std::vector<Value *> tables;
  for (Op *op : r.ops)
    if (op->is("gather") && op->operand(1) == r.positions && op->operand(0)->isWeight()) {
      Value *t = op->operand(0);
      const Tensor *d = t->data();
      if (d && d->dtype() == DType::F32 && d->rank() == 2 && d->shape()[1] <= D &&
          d->shape()[1] % 2 == 0 && std::find(tables.begin(), tables.end(), t) == tables.end())
        tables.push_back(t);
    }
  std::vector<Rope> out{Rope{}};
  for (const char *mode : {"half", "interleaved"})
    for (Value *c : tables)
      for (Value *s : tables)
        if (c != s && c->data()->shape() == s->data()->shape())
          out.push_back(Rope{mode, c, s, c->data()->shape()[1]});
  return out;
}

int64_t positionLimit(const Region &r) {
  int64_t lim = INT64_MAX;
  for (Op *op : r.ops)
    if (op->is("gather") && op->operand(1) == r.positions && op->operand(0)->shape()[0].isConstant())
      lim = std::min(lim, op->operand(0)->shape()[0].constant());
  return lim == INT64_MAX ? 0 : lim;
}

struct Reading {
  Value *x, *positions;
  std::vector<int64_t> offsets;
  Rope rope;
  Norm qNorm, kNorm;
};

// The reading of the prologue, or nullopt with the reason in `why`.
std::optional<Reading> readPrologue(Module &m, Function &f, Op &att, std::string &why) {
  auto r = findRegion(f, att, why);
  if (!r)
    return std::nullopt;
  int64_t lim = r->positions ? positionLimit(*r) : 1;
  if (lim <= 0) {
    why = "the prologue reads positions, but not through a table";
    return std::nullopt;
  }
  auto p = probeRegion(m, f, *r, att, lim);
  if (!p) {
    why = "the prologue could not be evaluated on a probe";
    return std::nullopt;
  }
  int64_t D = att.intAttr("head_dim", 0);
  if (D <= 0) {
    why = "the attention op has no head_dim";
    return std::nullopt;
  }
  Reading rd{r->x, nullptr, {}, {}, {}, {}};
  const Tensor &q = p->heads[0];
  std::vector<Norm> norms = normCandidates(*r, D);
  for (const Rope &rope : ropeCandidates(*r, D))
    for (const Norm &qn : norms) {
      auto qo = findOffset(*p, q, D, rope, qn);
      if (!qo)
        continue;
      if (numHeadOperands(att) == 1) {
        if (!rope.mode.empty() || qn.weight)
          continue; // cross-attention keys come from the cache: no rotation, no norm
        rd.offsets = {*qo};
        return rd;
      }
      auto vo = findOffset(*p, p->heads[2], D, Rope{});
      if (!vo)
        continue;
      for (const Norm &kn : norms) {
        if (!kn.weight != !qn.weight)
          continue; // both normalised or neither
        auto ko = findOffset(*p, p->heads[1], D, rope, kn);
        if (!ko)
          continue;
        rd.offsets = {*qo, *ko, *vo};
        rd.rope = rope;
        rd.qNorm = qn;
        rd.kNorm = kn;
        rd.positions = rope.mode.empty() ? nullptr : r->positions;
        return rd;
      }
    }
  why = "no reading (column offsets, RoPE half or interleaved, q/k RMSNorm) reproduces the "
        "prologue exactly";
  return std::nullopt;
}

// ---- the epilogue --------------------------------------------------------------

bool checkMergeShape(const Op &att, const Op &reshape) {
  const Shape &hs = att.result()->shape(), &rs = reshape.result()->shape();
  return rs.size() >= 2 && rs.size() <= 3 && (rs.size() == 2 || rs[0] == Dim(1)) &&
         rs[rs.size() - 2] == hs[2] && hs[1].isConstant() && hs[3].isConstant() &&
         rs.back() == Dim(hs[1].constant() * hs[3].constant());
}

// transpose(0, 2, 1, 3) then reshape to [1, T, heads·D] (or [T, heads·D]):
// the merge, if that is all the attention's result is used for.
Op *findMerge(Function &f, Op &att) {
  Op *tr = f.soleUser(att.result());
  if (!tr || !tr->is("transpose") || tr->intsAttr("perm") != std::vector<int64_t>{0, 2, 1, 3})
    return nullptr;
  Op *rs = f.soleUser(tr->result());
  if (!rs || !rs->is("reshape"))
    return nullptr;
  return checkMergeShape(att, *rs) ? rs : nullptr;
}


void remarkFolded(const Function &f, const Op &att, const Reading *rd, bool merged,
                  const Remarks &R) {
  RemarkBuilder b = R.passed("AttentionIoFolded", f, &att);
  b << arg("Op", att.kind());
  if (rd) {
    b << " reads q, k, v from the packed projection at offsets " << arg("Offsets", rd->offsets);
    if (!rd->rope.mode.empty())
      b << ", RoPE " << arg("RoPE", rd->rope.mode) << " inside (rotary_dim "
        << arg("RotaryDim", rd->rope.dim) << ")";
    if (rd->qNorm.weight)
      b << ", q/k RMSNorm inside";
  }
  if (merged)
    b << (rd ? " and writes" : " writes") << " merged heads [tokens, heads*head_dim]";
}

// `constWeights`: the weight made for each constant norm weight, shared by
// every attention op that reads it.
bool foldOne(Module &m, Function &f, Op &att, std::map<Value *, Value *> &constWeights,
             const Remarks &R) {
  if (att.hasAttr("qkv_offsets") || att.hasAttr("merge_heads"))
    return false;
  std::string why;
  auto rd = readPrologue(m, f, att, why);
  Op *merge = findMerge(f, att);
  if (!rd)
    R.missed("PrologueNotFolded", f, &att)
        << arg("Op", att.kind()) << " keeps its head split (a kernel of its own): "
        << arg("Reason", why);
  if (!merge)
    R.missed("MergeNotFolded", f, &att)
        << arg("Op", att.kind()) << " keeps its head merge: "
        << arg("Reason",
               "its result is not only transposed and reshaped to [tokens, heads*head_dim]");
  if (!rd && !merge)
    return false;
  remarkFolded(f, att, rd ? &*rd : nullptr, merge != nullptr, R);
  size_t nh = numHeadOperands(att);
  std::vector<Value *> operands(att.operands().begin(), att.operands().end());
  auto attrs = att.attrs();
  if (rd) {
    std::vector<Value *> rest(operands.begin() + nh, operands.end()); // the bias
    operands = {rd->x};
    if (!rd->rope.mode.empty()) {
      operands.insert(operands.end(), {rd->positions, rd->rope.cos, rd->rope.sin});
      attrs["rope"] = rd->rope.mode;
      attrs["rotary_dim"] = rd->rope.dim;
    }
    if (rd->qNorm.weight) {
      // The plan reads attention operands as weights: a constant becomes one.
      auto asWeight = [&](const Norm &n) {
        if (n.weight->isWeight())
          return n.weight;
        Value *&w = constWeights[n.weight];
        if (!w)
          w = m.addWeight("qk_norm." + std::to_string(m.weights().size()), n.weight->type(),
                          std::make_shared<Tensor>(*n.data));
        return w;
      };
      operands.insert(operands.end(), {asWeight(rd->qNorm), asWeight(rd->kNorm)});
      attrs["qk_norm_epsilon"] = static_cast<double>(rd->qNorm.eps);
    }
    operands.insert(operands.end(), rest.begin(), rest.end());
    attrs["qkv_offsets"] = rd->offsets;
  }
  Type type = merge ? merge->result()->type() : att.result()->type();
  if (merge)
    attrs["merge_heads"] = int64_t(1);
  auto op = std::make_unique<Op>(att.kind(), operands, std::vector<Type>{type}, att.loc());
  for (auto &[k, a] : attrs)
    op->setAttr(k, a);
  Op *nop = f.insertBefore(f.find(&att), std::move(op));
  if (merge) {
    Op *tr = f.soleUser(att.result());
    f.replaceAllUses(merge->result(), nop->result());
    f.erase(merge);
    f.erase(tr);
  } else {
    f.replaceAllUses(att.result(), nop->result());
  }
  f.erase(&att);
  return true;
}

} // namespace

llvm::Error foldAttentionIoPass(Module &m) {
  Remarks R(m, "fold-attention-io");
  for (Function *f : planPrograms(m)) {
    std::vector<Op *> atts;
    for (auto &op : f->ops())
      if (isAttention(*op))
        atts.push_back(op.get());
    std::map<Value *, Value *> constWeights;
    for (Op *a : atts)
      foldOne(m, *f, *a, constWeights, R);
    f->eraseDeadOps();
  }
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
