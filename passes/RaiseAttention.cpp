// raise-attention: softmax(q·kᵀ·scale + mask)·v  ->  attention(q, k, v[, key_mask])
//
// The structure (two matmuls around a softmax, the scale, the head layout) is
// matched; the mask is classified by evaluation (analysis/MaskClassifier), so
// however the exporter built it, we learn "causal, window 8, key padding from
// attention_mask". GQA/MQA head repeats (unsqueeze -> expand -> reshape) are
// peeled so the op reads the kv_heads-sized K and V a cache will hold.
// Remarks: each attention raised (Passed), each mask classified (Analysis),
// and each rank-4 softmax left alone with the form that stopped it (Missed:
// soft-capped scores, `where` masks, ...).
#include "compiler/ir/Builder.h"
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "passes/analysis/Match.h"
#include "passes/analysis/MaskClassifier.h"
#include "passes/analysis/PlanOptions.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>

namespace genc {
namespace {

llvm::Error failAt(const Op *op, const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s '%s': %s",
                                 op->kind().c_str(), op->loc().c_str(), msg.c_str());
}

class Raiser {
public:
  Raiser(Module &m, Function &f) : m_(m), f_(f), R_(m, "raise-attention") {
    auto it = m.metadata().find("config.sliding_window");
    if (it != m.metadata().end())
      windowHint_ = std::atoll(it->second.c_str());
  }

  llvm::Error run() {
    std::vector<Op *> softmaxes;
    for (auto &op : f_.ops())
      if (op->is("softmax"))
        softmaxes.push_back(op.get());
    for (Op *s : softmaxes)
      if (auto e = raise(s))
        return e;
    f_.eraseDeadOps();
    return llvm::Error::success();
  }

private:
  Value *insert(Op *before, const char *kind, std::vector<Value *> operands, Type type,
                std::map<std::string, Attribute> attrs = {}) {
    return insertOp(f_, before, kind, std::move(operands), std::move(type), std::move(attrs));
  }

  // The value K[b, h, s, d] given Kᵀ[b, h, d, s].
  Value *untranspose(Value *kt, Op *at) {
    if (Op *t = defOf(kt, "transpose")) {
      auto p = t->intsAttr("perm");
      if (p.size() == 4) {
        std::vector<int64_t> r = {p[0], p[1], p[3], p[2]};
        if (r == std::vector<int64_t>{0, 1, 2, 3})
          return t->operand(0);
        Value *src = t->operand(0);
        Shape s;
        for (int64_t i : r)
          s.push_back(src->shape()[i]);
        return insert(at, "transpose", {src}, Type{src->dtype(), s}, {{"perm", r}});
      }
    }
    Shape s = {kt->shape()[0], kt->shape()[1], kt->shape()[3], kt->shape()[2]};
    return insert(at, "transpose", {kt}, Type{kt->dtype(), s},
                  {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  }

  // K[b, kvh*rep, s, d] = reshape(expand(unsqueeze(Kkv, 2))) -> Kkv[b, kvh, s, d].
  Value *unrepeat(Value *k) {
    Op *r = defOf(k, "reshape");
    Op *e = r ? defOf(r->operand(0), "expand") : nullptr;
    Op *u = e ? defOf(e->operand(0), "unsqueeze") : nullptr;
    if (!u || u->intsAttr("axes") != std::vector<int64_t>{2})
      return k;
    Value *kv = u->operand(0);
    if (kv->rank() != 4 || e->result()->rank() != 5 || e->result()->shape()[1] != kv->shape()[1])
      return k;
    return kv;
  }

  llvm::Error raise(Op *softmax) {
    Value *x = softmax->operand(0);
    int64_t axis = softmax->intAttr("axis", -1);
    if (x->rank() != 4 || (axis != -1 && axis != 3))
      return llvm::Error::success();
    auto users = f_.users(softmax->result());
    if (users.size() != 1)
      return notRaised(softmax, "its result is read by " + std::to_string(users.size()) +
                                    " ops, not only by the *V matmul");
    if (!users[0]->is("matmul") || users[0]->operand(0) != softmax->result())
      return notRaised(softmax, "its result is read by " + users[0]->kind() +
                                    ", not by a *V matmul");
    Op *pv = users[0];
    // scores [+ mask [+ bias ...]]: the additive terms, however the adds nest
    // (T5: (scores + position_bias) + mask), are summed into one term to classify.
    std::vector<Value *> terms;
    Value *scores = splitScores(x, terms);
    if (!scores)
      return notRaised(softmax, whyNotScores(x));
    std::vector<const Value *> key(terms.begin(), terms.end());
    std::sort(key.begin(), key.end());
    Value *mask = nullptr;
    if (auto it = sums_.find(key); it != sums_.end())
      mask = it->second; // the same terms as an earlier layer: share its sum
    if (!mask && !terms.empty()) {
      mask = terms[0];
      for (size_t i = 1; i < terms.size(); ++i)
        mask = sumTerms(mask, terms[i], softmax); // later layers reuse it: defined before theirs
    }
    if (mask)
      sums_[key] = mask;
    double scale = 1.0;
    Op *qk = defOf(scores, "matmul");
    if (!qk) {
      Op *s = scores->definingOp();
      auto c = s && (s->is("mul") || s->is("div")) ? splitConstOperand(s) : std::nullopt;
      if (!c || (s->is("div") && c->other != s->operand(0)))
        return notRaised(softmax,
                         "the scores divide a constant (c / s) instead of being divided by one");
      scale = s->is("mul") ? c->value : 1.0 / c->value;
      qk = defOf(c->other, "matmul");
    }
    if (!qk || qk->operand(0)->rank() != 4 || qk->operand(1)->rank() != 4)
      return notRaised(softmax, "q*k^T is not a matmul of rank-4 heads");
    Value *q = qk->operand(0);
    Value *k = unrepeat(untranspose(qk->operand(1), pv));
    Value *v = unrepeat(pv->operand(1));
    const Shape &qs = q->shape();
    if (k->rank() != 4 || v->rank() != 4 || !qs[1].isConstant() || !qs[3].isConstant() ||
        !k->shape()[1].isConstant())
      return failAt(softmax, "attention heads must have constant counts and sizes");
    int64_t heads = qs[1].constant(), kvHeads = k->shape()[1].constant();
    if (kvHeads == 0 || heads % kvHeads)
      return failAt(softmax, "query heads are not a multiple of key/value heads");

    MaskKind kind;
    if (mask) {
      // Layers share one mask value (T5 passes its position bias along):
      // classify it once.
      auto cached = masks_.find(mask);
      if (cached == masks_.end()) {
        Op *maskOp = mask->definingOp() ? mask->definingOp() : softmax;
        auto mk = classifyMask(m_, f_, mask, windowHint_, planOptions(m_).maxLength);
        if (!mk) {
          std::string why = llvm::toString(mk.takeError());
          R_.missed("MaskNotClassified", f_, maskOp)
              << "the attention mask is none of the kinds the attention op takes: "
              << arg("Reason", why);
          return failAt(maskOp, "cannot classify the attention mask: " + why);
        }
        R_.analysis("MaskClassified", f_, maskOp)
            << "by evaluation on probes, the mask is " << arg("Mask", mk->describe());
        cached = masks_.emplace(mask, std::make_pair(*mk, nullptr)).first;
      }
      kind = cached->second.first;
    }
    std::vector<Value *> operands = {q, k, v};
    if (!kind.keyPadding.empty())
      operands.push_back(f_.argument(kind.keyPadding));
    std::map<std::string, Attribute> attrs = {{"num_heads", heads},
                                              {"num_kv_heads", kvHeads},
                                              {"head_dim", qs[3].constant()},
                                              {"scale", scale},
                                              {"causal", int64_t(kind.causal)},
                                              {"window", kind.window}};
    if (kind.relativeBias) {
      Value *&table = masks_[mask].second;
      if (!table) {
        auto t = biasTable(*kind.relativeBias, heads);
        if (!t)
          return failAt(softmax, llvm::toString(t.takeError()));
        table = *t;
      }
      operands.push_back(table);
      attrs["bias_max_distance"] = kind.maxDistance;
    }
    Value *out = insert(pv, "attention", operands, pv->result()->type(), attrs);
    f_.replaceAllUses(pv->result(), out);
    ++raised_;
    R_.passed("AttentionRaised", f_, softmax)
        << "softmax(q*k^T*scale + mask)*v raised to one attention op: " << arg("Heads", heads)
        << " heads, " << arg("KVHeads", kvHeads) << " KV heads, head_dim "
        << arg("HeadDim", qs[3].constant()) << "; mask " << arg("Mask", kind.describe());
    return llvm::Error::success();
  }

  llvm::Error notRaised(Op *softmax, const std::string &why) {
    R_.missed("AttentionNotRaised", f_, softmax)
        << "a softmax over rank-4 scores is not raised to attention: " << arg("Reason", why);
    return llvm::Error::success();
  }

  // Why softmax(x) is not softmax(q·kᵀ·scale + additive terms): the form
  // found between the softmax and a rank-4 matmul.
  static std::string whyNotScores(Value *x) {
    bool tanh = false, where = false, computedScale = false;
    std::function<bool(Value *, int)> reaches = [&](Value *v, int depth) {
      Op *op = v->definingOp();
      if (!op || depth > 8)
        return false;
      if (op->is("matmul"))
        return v->rank() == 4;
      static const std::set<std::string> between = {"add", "sub", "mul",  "div",
                                                     "tanh", "where", "cast"};
      if (!between.count(op->kind()))
        return false;
      bool any = false;
      for (Value *o : op->operands())
        any |= reaches(o, depth + 1);
      tanh |= any && op->is("tanh");
      where |= any && op->is("where");
      computedScale |= any && (op->is("mul") || op->is("div")) && !splitConstOperand(op);
      return any;
    };
    if (!reaches(x, 0))
      return "its input is not computed from a q*k^T matmul";
    if (tanh)
      return "the scores are soft-capped (c*tanh(s/c)); the attention op has no soft-capping";
    if (where)
      return "the scores are masked with where(...) (masked_fill); only additive masks are raised";
    if (computedScale)
      return "the scores are scaled by a value that is not a constant";
    return "the scores reach the softmax through ops other than a constant scale and added terms";
  }

  // The relative bias as a weight [heads, 2M-1] (a per-head-shared bias repeated).
  llvm::Expected<Value *> biasTable(const Tensor &t, int64_t heads) {
    int64_t H = t.shape()[0], W = t.shape()[1];
    if (H != heads && H != 1)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the relative position bias has %lld heads, attention %lld",
                                     (long long)H, (long long)heads);
    auto data = std::make_shared<Tensor>(DType::F32, std::vector<int64_t>{heads, W});
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t d = 0; d < W; ++d)
        data->setDouble(h * W + d, t.getDouble((H == 1 ? 0 : h) * W + d));
    std::string name = f_.name() + ".relative_bias";
    int n = 0;
    while (m_.weight(name + "." + std::to_string(n)))
      ++n;
    return m_.addWeight(name + "." + std::to_string(n), Type{DType::F32, {Dim(heads), Dim(W)}},
                        data);
  }

  // The scores value inside a tree of adds rooted at x; the other operands
  // of those adds go to `terms`. Null if no add operand leads to q·kᵀ.
  Value *splitScores(Value *x, std::vector<Value *> &terms) {
    if (leadsToQK(x))
      return x;
    Op *add = defOf(x, "add");
    if (!add)
      return nullptr;
    for (int i = 0; i < 2; ++i)
      if (Value *s = splitScores(add->operand(i), terms)) {
        terms.push_back(add->operand(1 - i));
        return s;
      }
    return nullptr;
  }

  // a + b (numpy broadcasting) as a new op before `at`.
  Value *sumTerms(Value *a, Value *b, Op *at) {
    const Shape &sa = a->shape(), &sb = b->shape();
    size_t r = std::max(sa.size(), sb.size());
    Shape s(r, Dim(1));
    for (size_t i = 0; i < r; ++i) {
      const Dim *da = i < r - sa.size() ? nullptr : &sa[i - (r - sa.size())];
      const Dim *db = i < r - sb.size() ? nullptr : &sb[i - (r - sb.size())];
      s[i] = da && *da != Dim(1) ? *da : db ? *db : Dim(1);
    }
    return insert(at, "add", {a, b}, Type{a->dtype(), s});
  }

  // Whether v is (a constant multiple of) a rank-4 matmul: the scores side.
  bool leadsToQK(Value *v) {
    if (defOf(v, "matmul"))
      return true;
    Op *s = v->definingOp();
    if (s && (s->is("mul") || s->is("div")))
      if (auto c = splitConstOperand(s))
        return defOf(c->other, "matmul") != nullptr;
    return false;
  }

  Module &m_;
  Function &f_;
  Remarks R_;
  int64_t windowHint_ = 0;
  int raised_ = 0;
  // mask value -> its classification and (if biased) the bias table weight
  std::map<const Value *, std::pair<MaskKind, Value *>> masks_;
  std::map<std::vector<const Value *>, Value *> sums_; // additive terms -> their sum
};

} // namespace

llvm::Error raiseAttentionPass(Module &m) {
  std::vector<Function *> fs;
  for (auto &f : m.functions())
    fs.push_back(f.get());
  for (Function *f : fs)
    if (auto e = Raiser(m, *f).run())
      return e;
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
