#include "runtime/cpu/CpuDecoder.h"

#include "runtime/cpu/AttentionIo.h"
#include "runtime/cpu/CrossCache.h"
#include "runtime/cpu/FusedBody.h"
#include "runtime/cpu/KvCache.h"
#include "runtime/cpu/OpLibrary.h"

#include <cstdlib>
#include <cstring>

namespace genrt {
namespace {

// Values inside kernels are f32, i64 or bool (docs/ir-ops.md): widen stored
// f16/bf16 weights once at load instead of at every use.
Tensor toDomain(const Tensor &t) {
  if (t.dtype() == DType::F16 || t.dtype() == DType::BF16 || t.dtype() == DType::F64)
    return t.castTo(DType::F32);
  if (t.dtype() == DType::I32 || t.dtype() == DType::I8 || t.dtype() == DType::U8)
    return t.castTo(DType::I64);
  return t;
}

// Attention ops that need the executor's state (caches, token layout).
bool isCacheOp(const std::string &k) {
  return k == "kv_attention" || k == "cross_attention" || k == "packed_attention";
}

class CpuDecoder final : public Decoder {
public:
  explicit CpuDecoder(Plan plan) : plan_(std::move(plan)) {}

  Status init() {
    for (const auto &[name, prog] : plan_.programs)
      for (const auto &op : prog.ops)
        if (!isCacheOp(op.kind) && !cpu::findKernel(op.kind))
          return Status::error("plan op '" + op.kind + "' (at \"" + op.loc +
                               "\") has no CPU kernel in this genrun");
    for (const auto &[name, body] : plan_.functions)
      for (const auto &op : body.ops)
        if (!cpu::findKernel(op.kind))
          return Status::error("fused body '" + name + "' op '" + op.kind + "' has no CPU kernel");
    for (const auto &w : plan_.weights)
      weights_.push_back(toDomain(w));
    arenaBytes_ = plan_.arenaBytes();
    arena_.reset(static_cast<uint8_t *>(std::aligned_alloc(64, (arenaBytes_ + 63) / 64 * 64 + 64)));
    if (!arena_)
      return Status::error("cannot allocate a " + std::to_string(arenaBytes_) + "-byte arena");
    cache_ = std::make_unique<cpu::KvCache>(plan_);
    lengths_.assign(maxSlots(), 0);
    if (plan_.model.encoderDecoder) {
      cross_ = std::make_unique<cpu::CrossCache>(plan_);
      entryOfSlot_.assign(maxSlots(), -1);
    }
    return Status::ok();
  }

  const ModelInfo &info() const override { return plan_.model; }
  int32_t maxSlots() const override {
    return static_cast<int32_t>(plan_.model.maxBatch * plan_.model.maxBeams);
  }
  void resetSlot(int32_t slot) override {
    if (slot >= 0 && slot < maxSlots()) {
      lengths_[slot] = 0;
      if (cross_)
        entryOfSlot_[slot] = -1;
    }
  }
  int64_t slotLength(int32_t slot) const override {
    return slot >= 0 && slot < maxSlots() ? lengths_[slot] : 0;
  }
  int64_t memoryBytes() const override {
    int64_t w = 0;
    for (const auto &t : weights_)
      w += static_cast<int64_t>(t.numBytes());
    return w + plan_.kvCacheBytes() + plan_.crossKvCacheBytes() + arenaBytes_;
  }

  // Encodes one source into a free cross-cache entry (one not read by any
  // slot outside `slots`) and points every slot of `slots` at it.
  Status encode(const std::vector<int64_t> &sourceIds, const std::vector<int32_t> &slots) override {
    if (!cross_)
      return Status::error("this model has no encoder");
    int64_t S = static_cast<int64_t>(sourceIds.size());
    if (S == 0)
      return Status::error("encode: the source is empty");
    if (S > cross_->capacity())
      return Status::error("encode: the source has " + std::to_string(S) +
                           " tokens, more than the plan's maximum length " +
                           std::to_string(cross_->capacity()));
    for (int64_t t : sourceIds)
      if (t < 0 || t >= plan_.model.vocabSize)
        return Status::error("encode: token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                             std::to_string(plan_.model.vocabSize) + ")");
    std::vector<char> mine(maxSlots(), 0), busy(cross_->entries(), 0);
    for (int32_t s : slots) {
      if (s < 0 || s >= maxSlots())
        return Status::error("encode: slot " + std::to_string(s) + " out of range");
      mine[s] = 1;
    }
    for (int32_t s = 0; s < maxSlots(); ++s)
      if (!mine[s] && entryOfSlot_[s] >= 0)
        busy[entryOfSlot_[s]] = 1;
    int64_t entry = 0;
    while (entry < cross_->entries() && busy[entry])
      ++entry;
    if (entry == cross_->entries())
      return Status::error("encode: every cross-attention cache entry is in use (max batch " +
                           std::to_string(cross_->entries()) + ")");
    const Program *prog = plan_.program("encode");
    Tensor ids(DType::I64, {1, S}), pos(DType::I64, {1, S});
    for (int64_t i = 0; i < S; ++i) {
      ids.data<int64_t>()[i] = sourceIds[i];
      pos.data<int64_t>()[i] = i;
    }
    OpState st;
    st.symbols = {{"src_tokens", S}};
    st.segments = {{0, S}};
    std::vector<Tensor> outs;
    if (Status s = execute(*prog, {{"input_ids", ids}, {"positions", pos}}, st, outs); !s)
      return s;
    if (Status s = cross_->store(entry, outs, 0, S); !s)
      return s;
    for (int32_t s : slots)
      entryOfSlot_[s] = entry;
    return Status::ok();
  }

  Status reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src) override {
    if (dst.size() != src.size())
      return Status::error("reorderSlots: dst and src differ in length");
    for (size_t i = 0; i < dst.size(); ++i)
      if (dst[i] < 0 || dst[i] >= maxSlots() || src[i] < 0 || src[i] >= maxSlots())
        return Status::error("reorderSlots: slot out of range");
    cache_->reorder(dst, src, lengths_);
    std::vector<int64_t> old = lengths_;
    for (size_t i = 0; i < dst.size(); ++i)
      lengths_[dst[i]] = old[src[i]];
    if (cross_) { // beams share their item's cross entry: move the index, never the cache
      std::vector<int64_t> oldEntry = entryOfSlot_;
      for (size_t i = 0; i < dst.size(); ++i)
        entryOfSlot_[dst[i]] = oldEntry[src[i]];
    }
    return Status::ok();
  }

  Status forward(const std::vector<Chunk> &chunks, float *logits) override {
    int64_t vocab = plan_.model.vocabSize;
    std::vector<int64_t> pending(maxSlots(), 0);
    for (const Chunk &c : chunks) {
      if (c.slot < 0 || c.slot >= maxSlots())
        return Status::error("forward: slot " + std::to_string(c.slot) + " out of range");
      if (c.tokens.empty())
        return Status::error("forward: an empty chunk");
      pending[c.slot] += static_cast<int64_t>(c.tokens.size());
      if (lengths_[c.slot] + pending[c.slot] > plan_.model.maxLength)
        return Status::error("forward: slot " + std::to_string(c.slot) + " would exceed the plan's "
                             "max length " + std::to_string(plan_.model.maxLength));
      for (int64_t t : c.tokens)
        if (t < 0 || t >= vocab)
          return Status::error("forward: token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                               std::to_string(vocab) + ")");
    }
    // Pieces of at most max_tokens tokens; a long prompt is prefilled in
    // several pieces (chunked prefill) and only its last piece gives logits.
    int64_t budget = plan_.maxTokens;
    std::vector<Piece> piece;
    int64_t pieceTokens = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const Chunk &c = chunks[i];
      size_t done = 0;
      while (done < c.tokens.size()) {
        int64_t room = budget - pieceTokens;
        if (room == 0) {
          if (Status s = run(piece, logits); !s)
            return s;
          piece.clear();
          pieceTokens = 0;
          room = budget;
        }
        size_t n = std::min<size_t>(room, c.tokens.size() - done);
        bool last = done + n == c.tokens.size();
        piece.push_back({c.slot, std::vector<int64_t>(c.tokens.begin() + done, c.tokens.begin() + done + n),
                         last ? static_cast<int64_t>(i) : -1});
        pieceTokens += n;
        done += n;
      }
    }
    if (!piece.empty())
      if (Status s = run(piece, logits); !s)
        return s;
    return Status::ok();
  }

private:
  struct Piece {
    int32_t slot;
    std::vector<int64_t> tokens;
    int64_t logitRow; // chunk index whose logits this piece's last token gives; -1: none
  };

  Status run(const std::vector<Piece> &pieces, float *logits) {
    int64_t T = 0, R = 0;
    bool decode = true;
    for (const Piece &p : pieces) {
      T += static_cast<int64_t>(p.tokens.size());
      decode &= p.tokens.size() == 1 && p.logitRow >= 0;
      R += p.logitRow >= 0;
    }
    decode &= T <= maxSlots();
    const Program &prog = *plan_.program(decode ? "decode_step" : "prefill");
    std::map<std::string, int64_t> symbols = {{"tokens", T}, {"rows", decode ? T : R}};
    for (const auto &[sym, mx] : prog.maxSymbols)
      if (symbols.count(sym) && symbols[sym] > mx)
        return Status::error("forward: " + sym + " = " + std::to_string(symbols[sym]) +
                             " exceeds the plan's maximum " + std::to_string(mx));

    Tensor ids(DType::I64, {1, T}), pos(DType::I64, {1, T}), rows(DType::I64, {decode ? T : R});
    std::vector<cpu::TokenInfo> tokens;
    int64_t t = 0, r = 0;
    for (const Piece &p : pieces) {
      int64_t start = lengths_[p.slot];
      for (size_t i = 0; i < p.tokens.size(); ++i, ++t) {
        ids.data<int64_t>()[t] = p.tokens[i];
        pos.data<int64_t>()[t] = start + static_cast<int64_t>(i);
        tokens.push_back({p.slot, start + static_cast<int64_t>(i), start});
      }
      if (!decode && p.logitRow >= 0)
        rows.data<int64_t>()[r++] = t - 1;
    }
    if (decode)
      for (int64_t i = 0; i < T; ++i)
        rows.data<int64_t>()[i] = i;
    std::map<std::string, Tensor> args = {{"input_ids", ids}, {"positions", pos}, {"logit_rows", rows}};
    OpState st;
    st.symbols = symbols;
    st.tokens = std::move(tokens);
    if (cross_)
      for (const cpu::TokenInfo &ti : st.tokens)
        st.entryOfToken.push_back(entryOfSlot_[ti.slot]);
    std::vector<Tensor> results;
    if (Status s = execute(prog, args, st, results); !s)
      return s;
    if (results.empty())
      return Status::error("the plan's " + prog.name + " has no logits output");
    const Tensor &out = results[0];
    int64_t vocab = plan_.model.vocabSize;
    if (out.dtype() != DType::F32 || out.numElements() != (decode ? T : R) * vocab)
      return Status::error("the plan's logits have an unexpected shape");
    r = 0;
    for (const Piece &p : pieces)
      if (p.logitRow >= 0) {
        std::memcpy(logits + p.logitRow * vocab, out.data<float>() + r * vocab, vocab * sizeof(float));
        ++r;
      }
    for (const Piece &p : pieces)
      lengths_[p.slot] += static_cast<int64_t>(p.tokens.size());
    return Status::ok();
  }

  // What the stateful attention ops need to know about the packed tokens.
  struct OpState {
    std::map<std::string, int64_t> symbols;
    std::vector<cpu::TokenInfo> tokens;   // kv_attention
    std::vector<int64_t> entryOfToken;    // cross_attention
    std::vector<cpu::Segment> segments;   // packed_attention
  };

  // Runs a program over the arena; `results` get its outputs (arena views).
  Status execute(const Program &prog, const std::map<std::string, Tensor> &args, OpState &st,
                 std::vector<Tensor> &results) {
    for (const auto &[sym, mx] : prog.maxSymbols)
      if (st.symbols.count(sym) && st.symbols[sym] > mx)
        return Status::error(prog.name + ": " + sym + " = " + std::to_string(st.symbols[sym]) +
                             " exceeds the plan's maximum " + std::to_string(mx));
    std::vector<Tensor> vals(prog.values.size());
    for (size_t i = 0; i < prog.arguments.size(); ++i) {
      auto it = args.find(prog.argumentNames[i]);
      if (it == args.end())
        return Status::error("plan program " + prog.name + " takes an unknown argument '" +
                             prog.argumentNames[i] + "'");
      vals[prog.arguments[i]] = it->second;
    }
    for (size_t i = 0; i < prog.values.size(); ++i)
      if (prog.values[i].storage == Storage::Weight)
        vals[i] = weights_[prog.values[i].index];

    cpu::KernelContext ctx;
    ctx.symbols = &st.symbols;
    ctx.runBody = [this, &ctx](const std::string &b, const std::vector<Tensor> &in,
                               std::vector<Tensor> &out) {
      return cpu::runFusedBody(plan_.functions.at(b), weights_, ctx, in, out); // loader checked b
    };
    std::vector<int64_t> ranks;
    ctx.resultRanks = &ranks;
    for (const OpInfo &op : prog.ops) {
      std::vector<Tensor> ins;
      for (int32_t v : op.operands)
        ins.push_back(vals[v]);
      std::vector<Tensor> outs(op.results.size());
      ranks.clear();
      for (int32_t r : op.results)
        ranks.push_back(static_cast<int64_t>(prog.values[r].shape.size()));
      std::string failure;
      if (isCacheOp(op.kind)) {
        if (Status s = runAttention(op, prog, ins, outs, ctx, st); !s)
          failure = s.message();
      } else if (cpu::Error e = cpu::findKernel(op.kind)(ctx, op.attrs, ins, outs)) {
        failure = e.message();
      } else {
        // Kernels allocate their results; move each into its planned arena buffer.
        for (size_t i = 0; i < outs.size() && failure.empty(); ++i) {
          const ValueInfo &vi = prog.values[op.results[i]];
          Tensor view = Tensor::view(outs[i].dtype(), outs[i].shape(), arena_.get() + vi.offset);
          if (Status s = checkFits(vi, view); !s)
            failure = s.message();
          else if (outs[i].numBytes())
            std::memcpy(view.data<uint8_t>(), outs[i].rawData(), outs[i].numBytes());
          outs[i] = view;
        }
      }
      if (!failure.empty())
        return Status::error("op '" + op.kind + "' at \"" + op.loc + "\": " + failure);
      for (size_t i = 0; i < outs.size(); ++i)
        vals[op.results[i]] = outs[i];
    }
    results.clear();
    for (int32_t o : prog.outputs)
      results.push_back(vals[o]);
    return Status::ok();
  }

  // The stateful attention ops, on head-major operands (cpu/AttentionIo.h);
  // the result is written into its planned buffer.
  Status runAttention(const OpInfo &op, const Program &prog, const std::vector<Tensor> &ins,
                      std::vector<Tensor> &outs, cpu::KernelContext &ctx, OpState &st) {
    cpu::AttentionIo io;
    if (outs.size() != 1)
      return Status::error("bad operands");
    if (Status s = cpu::unpackAttention(op.attrs, ins, op.kind == "cross_attention" ? 1 : 3, io); !s)
      return s;
    const ValueInfo &vi = prog.values[op.results[0]];
    const auto &q = io.operands[0].shape();
    // Merged heads are [1, T, H·D] or [T, H·D] as planned: the same bytes.
    std::vector<int64_t> merged{q[2], q[1] * q[3]};
    if (vi.shape.size() == 3)
      merged.insert(merged.begin(), 1);
    Tensor out = Tensor::view(DType::F32, io.mergeHeads ? merged : q, arena_.get() + vi.offset);
    if (Status s = checkFits(vi, out); !s)
      return s;
    std::vector<Tensor> res{io.mergeHeads ? Tensor(DType::F32, q) : out};
    Status s = Status::ok();
    if (op.kind == "kv_attention")
      s = cache_->attend(ctx, op.attrs, io.operands, res, st.tokens);
    else if (op.kind == "cross_attention")
      s = cross_ ? cross_->attend(op.attrs, io.operands, res, st.entryOfToken)
                 : Status::error("cross_attention in a plan without a cross cache");
    else
      s = cpu::packedAttention(op.attrs, io.operands, res, st.segments);
    if (!s)
      return s;
    if (io.mergeHeads)
      cpu::mergeHeads(res[0], out);
    outs[0] = out;
    return Status::ok();
  }

  static Status checkFits(const ValueInfo &vi, const Tensor &t) {
    if (static_cast<int64_t>(t.numBytes()) > vi.maxBytes)
      return Status::error("a result of " + std::to_string(t.numBytes()) +
                           " bytes exceeds its planned buffer of " + std::to_string(vi.maxBytes));
    return Status::ok();
  }

  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  Plan plan_;
  std::vector<Tensor> weights_;
  int64_t arenaBytes_ = 0;
  std::unique_ptr<uint8_t, Free> arena_;
  std::unique_ptr<cpu::KvCache> cache_;
  std::vector<int64_t> lengths_;
  std::unique_ptr<cpu::CrossCache> cross_; // encoder-decoder only
  std::vector<int64_t> entryOfSlot_;       // slot -> its item's cross-cache entry (-1: none)
};

} // namespace

std::unique_ptr<Decoder> makeCpuDecoder(Plan plan, Status &err) {
  auto d = std::make_unique<CpuDecoder>(std::move(plan));
  err = d->init();
  if (!err)
    return nullptr;
  return d;
}

} // namespace genrt
