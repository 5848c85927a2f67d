// derive-plan: turns a decoder-only forward graph into generation functions.
//
//   @main(input_ids[batch, seq], attention_mask[batch, seq]) -> logits[batch, seq, V]
// becomes
//   @prefill(input_ids[1, tokens], positions[1, tokens], logit_rows[rows]) -> logits[1, rows, V]
//   @decode_step(input_ids[1, tokens], positions[1, tokens]) -> logits[1, tokens, V]
//
// The runtime packs the new tokens of many sequences along `tokens` (no
// padding): batch is 1. Self-attention becomes kv_attention, which appends to
// and reads a per-layer KV cache. Values that depend on positions only (learned
// position embeddings, RoPE cos/sin, whatever the exporter computed) are found
// by taint analysis, evaluated on probes, checked to be a function of the
// position alone, and replaced by a lookup in a table over positions. What is
// left must be position-wise, which analysis/PositionWise proves op by op;
// otherwise the model is refused with the op that mixes tokens. Each table
// found is an Analysis remark.
#include "compiler/ir/Clone.h"
#include "compiler/remarks/Remark.h"
#include "compiler/ir/Symbols.h"
#include "compiler/ir/Builder.h"
#include "passes/Passes.h"
#include "passes/analysis/Match.h"
#include "passes/analysis/PlanOptions.h"
#include "passes/analysis/PositionWise.h"
#include "passes/analysis/Probe.h"

#include <set>

namespace genc {
namespace {

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

std::string where(const Op *op) { return "'" + op->kind() + "' at \"" + op->loc() + "\""; }

class PlanDeriver {
public:
  PlanDeriver(Module &m, Function &f, const PlanOptions &opts)
      : m_(m), f_(f), opts_(opts), R_(m, "derive-plan") {}

  /// An encoder (encoder-decoder models): @encoder(input_ids[batch, src], ...)
  /// -> @encode(input_ids[1, src_tokens], positions[1, src_tokens]) whose
  /// outputs (already set by the caller) are the cross-attention K/V. Sources
  /// are packed along src_tokens; packed_attention keeps each to itself.
  llvm::Error runEncoder() {
    tok_ = "src_tokens";
    Value *ids = f_.argument("input_ids");
    if (!ids || ids->rank() != 2 || !ids->shape()[0].isSymbol() || !ids->shape()[1].isSymbol())
      return fail("expected an encoder input input_ids[batch, sequence]");
    for (auto &op : f_.ops())
      if (op->is("attention")) {
        Op *a = op.get();
        if (a->intAttr("causal", 0) || a->intAttr("window", 0))
          return fail("encoder attention " + where(a) + " is not bidirectional");
        std::vector<Value *> operands = {a->operand(0), a->operand(1), a->operand(2)};
        std::map<std::string, Attribute> attrs = {{"num_heads", a->intAttr("num_heads", 0)},
                                                  {"num_kv_heads", a->intAttr("num_kv_heads", 0)},
                                                  {"head_dim", a->intAttr("head_dim", 0)},
                                                  {"scale", a->floatAttr("scale", 1.0)}};
        if (int64_t md = a->intAttr("bias_max_distance", 0)) {
          operands.push_back(a->operands().back());
          attrs["bias_max_distance"] = md;
        }
        Value *out = insert(a, "packed_attention", operands, a->result()->type(), attrs);
        f_.replaceAllUses(a->result(), out);
      }
    f_.eraseDeadOps();
    substituteSymbols(f_, {{ids->shape()[0].symbolName(), Dim(1)},
                           {ids->shape()[1].symbolName(), Dim::symbol(tok_)}});
    positions_ = f_.addArgument("positions", Type{DType::I64, {Dim(1), Dim::symbol(tok_)}});
    if (auto e = replacePositionValues())
      return e;
    f_.eraseDeadOps();
    if (auto e = dropOtherArguments(ids))
      return e;
    if (auto e = checkPositionWise(f_, tok_))
      return fail(llvm::toString(std::move(e)));
    f_.setName("encode");
    return llvm::Error::success();
  }

  llvm::Error run() {
    Value *ids = f_.argument("input_ids");
    if (!ids || ids->rank() != 2 || !ids->shape()[0].isSymbol() || !ids->shape()[1].isSymbol())
      return fail("expected an input input_ids[batch, sequence]");
    if (f_.outputs().empty() || f_.outputs()[0].value->rank() != 3)
      return fail("expected logits[batch, sequence, vocab] as the first output");
    while (f_.outputs().size() > 1) // only logits matter for generation
      return fail("expected one output (logits); the model has " +
                  std::to_string(f_.outputs().size()));
    if (auto e = lowerAttention())
      return e;
    substituteSymbols(f_, {{ids->shape()[0].symbolName(), Dim(1)},
                           {ids->shape()[1].symbolName(), Dim::symbol("tokens")}});
    positions_ = f_.addArgument("positions", Type{DType::I64, {Dim(1), Dim::symbol("tokens")}});
    if (auto e = replacePositionValues())
      return e;
    f_.eraseDeadOps();
    if (auto e = dropOtherArguments(ids))
      return e;
    if (auto e = checkPositionWise(f_, "tokens"))
      return fail(llvm::toString(std::move(e)));
    return split();
  }

private:
  llvm::Error dropOtherArguments(Value *ids) {
    for (auto &a : std::vector<Value *>(argPtrs()))
      if (a != ids && a != positions_) {
        if (f_.hasUses(a))
          return fail("input '" + a->name() + "' is used by " + where(f_.users(a)[0]) +
                      " outside attention masks and positions");
        f_.removeArgument(a);
      }
    return llvm::Error::success();
  }

  std::vector<Value *> argPtrs() {
    std::vector<Value *> r;
    for (auto &a : f_.arguments())
      r.push_back(a.get());
    return r;
  }

  Value *insert(Op *before, const char *kind, std::vector<Value *> operands, Type type,
                std::map<std::string, Attribute> attrs = {}) {
    return insertOp(f_, before, kind, std::move(operands), std::move(type), std::move(attrs));
  }

  llvm::Error lowerAttention() {
    int64_t layer = 0;
    std::vector<Op *> atts;
    for (auto &op : f_.ops())
      if (op->is("attention"))
        atts.push_back(op.get());
    if (atts.empty())
      return fail("no attention was raised; the model's attention is not recognised");
    for (Op *a : atts) {
      if (!a->intAttr("causal", 0))
        return fail("attention " + where(a) + " is not causal; a decoder-only plan needs causal "
                    "self-attention");
      std::vector<Value *> operands = {a->operand(0), a->operand(1), a->operand(2)};
      std::map<std::string, Attribute> attrs = {{"layer", layer++},
                                                {"num_heads", a->intAttr("num_heads", 0)},
                                                {"num_kv_heads", a->intAttr("num_kv_heads", 0)},
                                                {"head_dim", a->intAttr("head_dim", 0)},
                                                {"scale", a->floatAttr("scale", 1.0)},
                                                {"window", a->intAttr("window", 0)}};
      if (int64_t md = a->intAttr("bias_max_distance", 0)) {
        operands.push_back(a->operands().back()); // T5's relative bias table
        attrs["bias_max_distance"] = md;
      }
      Value *out = insert(a, "kv_attention", operands, a->result()->type(), attrs);
      f_.replaceAllUses(a->result(), out);
      f_.erase(a);
    }
    m_.metadata()["plan.layers"] = std::to_string(layer);
    return llvm::Error::success();
  }

  // Taint: which values depend on token data, and which on positions (the
  // arguments' shapes or the attention mask) without token data.
  llvm::Error replacePositionValues() {
    Value *ids = f_.argument("input_ids");
    std::set<const Value *> data, pos;
    data.insert(ids);
    for (auto &a : f_.arguments())
      if (a.get() != ids && a.get() != positions_)
        pos.insert(a.get());
    for (auto &op : f_.ops()) {
      bool d = false, p = op->is("dims");
      if (op->is("shape")) {
        p = true; // reads only the operand's shape
      } else {
        for (Value *v : op->operands()) {
          d |= data.count(v) != 0;
          p |= pos.count(v) != 0;
        }
      }
      for (Value *r : op->results()) {
        if (d)
          data.insert(r);
        else if (p)
          pos.insert(r);
      }
    }
    // The frontier: position values consumed by token-data ops, except values
    // that only describe shapes (small integer vectors).
    std::vector<Value *> frontier;
    std::set<const Value *> seen;
    for (auto &op : f_.ops()) {
      bool isData = false;
      for (Value *r : op->results())
        isData |= data.count(r) != 0;
      if (!isData)
        continue;
      for (Value *v : op->operands()) {
        if (!pos.count(v) || seen.count(v) || v->isArgument())
          continue;
        bool shapeLike = !isFloat(v->dtype()) && v->rank() <= 1;
        if (shapeLike)
          continue;
        seen.insert(v);
        frontier.push_back(v);
      }
    }
    int n = 0;
    for (Value *v : frontier)
      if (auto e = replaceWithTable(v, n++))
        return e;
    return llvm::Error::success();
  }

  llvm::Error replaceWithTable(Value *v, int index) {
    Op *def = v->definingOp();
    std::string at = def ? where(def) : "an argument";
    int64_t axis = -1;
    for (size_t i = 0; i < v->shape().size(); ++i) {
      const Dim &d = v->shape()[i];
      if (d == Dim::symbol(tok_))
        axis = axis == -1 ? static_cast<int64_t>(i) : -2;
      else if (!d.isConstant())
        return fail("the position-dependent value of " + at + " has a dim " + d.str() +
                    " that is neither the sequence nor a constant");
    }
    if (axis < 0)
      return fail("the position-dependent value of " + at + " is not indexed by position once");
    for (int64_t i = 0; i < axis; ++i)
      if (v->shape()[i] != Dim(1))
        return fail("the position-dependent value of " + at + " has a non-unit dim before "
                    "the sequence axis");
    // Evaluate over every position the plan can reach, then on a short
    // sequence: the value at position p must not depend on the length.
    ProbeSpec spec;
    spec.batch = 1;
    spec.length = opts_.positions();
    spec.padded = false;
    auto full = evaluateWithProbe(m_, f_, v, spec);
    if (!full)
      return fail("evaluating the position-dependent value of " + at + " over " +
                  std::to_string(opts_.positions()) + " positions: " +
                  llvm::toString(full.takeError()));
    spec.length = std::min<int64_t>(5, opts_.positions());
    auto part = evaluateWithProbe(m_, f_, v, spec);
    if (!part)
      return part.takeError();
    const Tensor &t = *full;
    for (int64_t i = 0; i < part->numElements(); ++i)
      if (part->getDouble(i) != t.getDouble(i))
        return fail("the value of " + at + " at a position depends on the sequence length; it "
                    "is not a table over positions");
    // The table: [max_length, inner dims...].
    std::vector<int64_t> tshape = {opts_.positions()};
    Shape tdims = {Dim(opts_.positions())};
    for (size_t i = axis + 1; i < t.shape().size(); ++i) {
      tshape.push_back(t.shape()[i]);
      tdims.push_back(Dim(t.shape()[i]));
    }
    auto table = std::make_shared<Tensor>(t.reshaped(tshape).castTo(v->dtype()));
    std::string name = "position_table." + std::to_string(index);
    while (m_.weight(name))
      name += "_";
    Value *w = m_.addWeight(name, Type{v->dtype(), tdims}, table);
    R_.analysis("PositionTable", f_, def)
        << "the " << arg("Op", def ? def->kind() : "argument")
        << " result depends only on the position (by evaluation on probes): a lookup in "
        << arg("Table", "@" + name) << " " << arg("Type", w->type());
    Shape gshape = {Dim(1), Dim::symbol(tok_)};
    gshape.insert(gshape.end(), tdims.begin() + 1, tdims.end());
    Op *first = f_.ops().front().get();
    Value *g = insert(first, "gather", {w, positions_}, Type{v->dtype(), gshape},
                      {{"axis", int64_t(0)}});
    Value *r = g;
    if (gshape != v->shape()) {
      Value *shape = insert(first, "dims", {}, Type{DType::I64, {Dim(v->rank())}},
                            {{"value", DimList{v->shape()}}});
      r = insert(first, "reshape", {g, shape}, v->type());
    }
    // gather/dims/reshape were put first: their operands are weights and args.
    f_.replaceAllUses(v, r);
    return llvm::Error::success();
  }

  // @main -> @prefill (+ logit_rows) and @decode_step.
  llvm::Error split() {
    Value *logits = f_.outputs()[0].value;
    Function *decode = cloneFunction(m_, f_, "decode_step");
    (void)decode;
    f_.setName("prefill");
    // Logits for the last token of each sequence only: gather the rows of the
    // lm_head matmul's input, so the vocabulary projection runs `rows` times.
    Op *head = logits->definingOp();
    auto isProjection = [](const Op *op) { return op->is("matmul") || op->is("matmul_nbits"); };
    while (head && !isProjection(head) && head->numOperands() >= 1 &&
           (head->is("add") || head->is("reshape") || head->is("cast") || head->is("mul")))
      head = head->operand(0)->definingOp();
    if (!head || !isProjection(head))
      return fail("cannot find the vocabulary projection (matmul) producing the logits");
    Value *x = head->operand(0);
    int64_t axis = -1;
    for (size_t i = 0; i < x->shape().size(); ++i)
      if (x->shape()[i] == Dim::symbol("tokens"))
        axis = i;
    if (axis < 0)
      return fail("the vocabulary projection's input has no token axis");
    Value *rows = f_.addArgument("logit_rows", Type{DType::I64, {Dim::symbol("rows")}});
    Shape gs = x->shape();
    gs[axis] = Dim::symbol("rows");
    Value *g = insert(head, "gather", {x, rows}, Type{x->dtype(), gs}, {{"axis", axis}});
    head->setOperand(0, g);
    // Downstream types: tokens -> rows from the head on.
    bool after = false;
    for (auto &op : f_.ops()) {
      if (op.get() == head)
        after = true;
      if (!after)
        continue;
      for (Value *r : op->results()) {
        Type t = r->type();
        for (Dim &d : t.shape)
          d = d.substitute({{"tokens", Dim::symbol("rows")}});
        r->setType(t);
      }
      for (auto &[name, attr] : op->attrs())
        if (std::holds_alternative<DimList>(attr)) {
          DimList dl = std::get<DimList>(attr);
          for (Dim &d : dl.dims)
            d = d.substitute({{"tokens", Dim::symbol("rows")}});
          op->setAttr(name, dl);
        }
    }
    return llvm::Error::success();
  }

  Module &m_;
  Function &f_;
  const PlanOptions &opts_;
  Remarks R_;
  Value *positions_ = nullptr;
  std::string tok_ = "tokens"; // the packed token axis' symbol
};

// Encoder-decoder: the decoder's cross-attention K/V depend on the encoder
// output only. Their computation moves to the end of @encoder (which then
// returns them instead of its hidden states), so it runs once per source
// sentence; in the decoder each cross attention becomes
// cross_attention(q) {layer}, reading the cache the runtime fills from those
// outputs (one entry per batch item, shared by its beams).
class CrossHoister {
public:
  CrossHoister(Module &m, Function &enc, Function &dec, Value *ids)
      : m_(m), enc_(enc), dec_(dec), ids_(ids) {}

  llvm::Error run() {
    Value *ehs = dec_.argument("encoder_hidden_states");
    if (!ehs)
      return fail("the decoder has no input 'encoder_hidden_states': it does not read the "
                  "encoder's output, so the two files do not form an encoder-decoder pair");
    if (enc_.outputs().empty() || enc_.outputs()[0].value->rank() != 3)
      return fail("the encoder's first output is not hidden states [batch, sequence, hidden]");
    Value *hidden = enc_.outputs()[0].value;
    if (ehs->rank() != 3)
      return fail("the decoder's encoder_hidden_states is not [batch, sequence, hidden]");
    const Dim &he = hidden->shape()[2], &hd = ehs->shape()[2];
    if (!he.isConstant() || !hd.isConstant() || he.constant() != hd.constant())
      return fail("the encoder's hidden size (" + he.str() + ") differs from the size of the "
                  "decoder's encoder_hidden_states (" + hd.str() + "): the encoder and decoder "
                  "do not belong together");
    // The decoder's batch / source symbols become the encoder's.
    for (int i = 0; i < 2; ++i)
      if (ehs->shape()[i].isSymbol())
        sub_[ehs->shape()[i].symbolName()] = hidden->shape()[i];
    map_[ehs] = hidden;
    // Cross attentions: keys from encoder_hidden_states and not from the
    // decoder's tokens (taint from each argument).
    auto taint = [&](Value *from) {
      std::set<const Value *> t = {from};
      for (auto &op : dec_.ops())
        for (Value *v : op->operands())
          if (t.count(v))
            for (Value *r : op->results())
              t.insert(r);
      return t;
    };
    std::set<const Value *> fromEnc = taint(ehs), fromIds = taint(ids_);
    std::vector<Op *> cross;
    for (auto &op : dec_.ops())
      if (op->is("attention") && fromEnc.count(op->operand(1)) && !fromIds.count(op->operand(1)))
        cross.push_back(op.get());
    if (cross.empty())
      return fail("no cross-attention over encoder_hidden_states was recognised in the decoder");
    enc_.clearOutputs();
    int64_t layer = 0;
    for (Op *a : cross) {
      if (a->intAttr("causal", 0) || a->intAttr("window", 0) || a->intAttr("bias_max_distance", 0))
        return fail("cross attention " + where(a) + " is causal, windowed or biased; only key "
                    "padding is supported");
      for (int i = 1; i <= 2; ++i) {
        auto v = hoist(a->operand(i));
        if (!v)
          return v.takeError();
        enc_.addOutput(std::string(i == 1 ? "cross_k." : "cross_v.") + std::to_string(layer), *v);
      }
      auto op = std::make_unique<Op>("cross_attention", std::vector<Value *>{a->operand(0)},
                                     std::vector<Type>{a->result()->type()}, a->loc());
      op->setAttr("layer", layer++);
      for (const char *k : {"num_heads", "num_kv_heads", "head_dim"})
        op->setAttr(k, a->intAttr(k, 0));
      op->setAttr("scale", a->floatAttr("scale", 1.0));
      Value *out = dec_.insertBefore(dec_.find(a), std::move(op))->result();
      dec_.replaceAllUses(a->result(), out);
    }
    m_.metadata()["plan.cross_layers"] = std::to_string(layer);
    dec_.eraseDeadOps();
    return llvm::Error::success();
  }

private:
  // Clones the ops computing v (from encoder_hidden_states and weights) to the
  // end of the encoder; returns the encoder's copy of v.
  llvm::Expected<Value *> hoist(Value *v) {
    if (auto it = map_.find(v); it != map_.end())
      return it->second;
    if (v->isWeight())
      return v;
    if (v->isArgument())
      return fail("the cross-attention keys/values depend on the decoder input '" + v->name() +
                  "'; only encoder_hidden_states may feed them");
    Op *op = v->definingOp();
    std::vector<Value *> operands;
    for (Value *o : op->operands()) {
      auto c = hoist(o);
      if (!c)
        return c.takeError();
      operands.push_back(*c);
    }
    std::vector<Type> types;
    for (Value *r : op->results()) {
      Type t = r->type();
      for (Dim &d : t.shape)
        d = d.substitute(sub_);
      types.push_back(t);
    }
    auto c = std::make_unique<Op>(op->kind(), operands, types, op->loc());
    for (auto &[k, a] : op->attrs()) {
      if (auto *dl = std::get_if<DimList>(&a)) {
        DimList d = *dl;
        for (Dim &x : d.dims)
          x = x.substitute(sub_);
        c->setAttr(k, d);
      } else {
        c->setAttr(k, a);
      }
    }
    Op *added = enc_.append(std::move(c));
    for (size_t i = 0; i < op->numResults(); ++i)
      map_[op->result(i)] = added->result(i);
    return map_[v];
  }

  Module &m_;
  Function &enc_, &dec_;
  Value *ids_;
  ValueMap map_;
  std::map<std::string, Dim> sub_;
};

llvm::Error deriveEncoderDecoder(Module &m, Function &enc, Function &dec, const PlanOptions &opts) {
  if (!enc.argument("input_ids"))
    return fail("the encoder has no input 'input_ids'");
  Value *ids = dec.argument("decoder_input_ids");
  if (!ids)
    ids = dec.argument("input_ids");
  if (!ids)
    return fail("the decoder has no input 'decoder_input_ids'");
  if (auto e = CrossHoister(m, enc, dec, ids).run())
    return e;
  if (auto e = PlanDeriver(m, enc, opts).runEncoder())
    return e;
  ids->setName("input_ids");
  for (const char *name : {"encoder_hidden_states", "encoder_attention_mask"})
    if (Value *a = dec.argument(name); a && !dec.hasUses(a))
      dec.removeArgument(a);
  return PlanDeriver(m, dec, opts).run();
}

} // namespace

llvm::Error derivePlanPass(Module &m) {
  PlanOptions opts = planOptions(m);
  Function *enc = m.function("encoder"), *dec = m.function("decoder");
  if (enc && dec) {
    if (auto e = deriveEncoderDecoder(m, *enc, *dec, opts))
      return e;
    m.eraseUnusedWeights();
    return llvm::Error::success();
  }
  Function *f = m.function("main");
  if (!f)
    return fail("expected a function @main (the imported forward graph), or @encoder and "
                "@decoder");
  if (auto e = PlanDeriver(m, *f, opts).run())
    return e;
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
