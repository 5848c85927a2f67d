#include "runtime/cpu/CpuExecutor.h"

#include "runtime/Env.h"
#include "runtime/HostMemory.h"
#include "runtime/plan/OpSignatures.h"
#include "runtime/cpu/AttentionIo.h"
#include "runtime/cpu/FusedBody.h"
#include "runtime/cpu/FusedLoop.h"
#include "runtime/cpu/FusedRows.h"
#include "runtime/plan/WeightUses.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/KvCache.h"
#include "runtime/cpu/MatmulPanels.h"
#include "runtime/cpu/OpLibrary.h"

#include <algorithm>
#include <sys/mman.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace genrt {
namespace cpu {
namespace {

// Values inside kernels are f32, i64 or bool (docs/ir-ops.md): widen stored
// f16/bf16 weights once at load instead of at every use.
Tensor widen(const Tensor &t) {
  if (t.dtype() == DType::F16 || t.dtype() == DType::BF16 || t.dtype() == DType::F64)
    return t.castTo(DType::F32);
  if (t.dtype() == DType::I32 || t.dtype() == DType::I8 || t.dtype() == DType::U8)
    return t.castTo(DType::I64);
  return t;
}

// Weights read in place from the plan's mapping are paged in now, once, not
// by the first prompt's prefill: on a 2-core machine GPT-2's first prefill
// took 2x HF's for the page faults of 500 MB of weights alone (HF's weights
// are in memory before its first token too).
template <typename Panels>
void prefault(const std::vector<Tensor> &weights, const Panels &panels) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  volatile unsigned char sink = 0;
  for (size_t w = 0; w < weights.size(); ++w) {
    const Tensor &t = weights[w];
    if (w < panels.size() && panels[w]) // packed: the original is not read again
      continue;
    const auto *p = static_cast<const unsigned char *>(t.rawData());
    const size_t n = t.numBytes();
    if (!p || n == 0)
      continue;
    const uintptr_t start = reinterpret_cast<uintptr_t>(p) / page * page;
    madvise(reinterpret_cast<void *>(start), n + (reinterpret_cast<uintptr_t>(p) - start), MADV_WILLNEED);
    unsigned char acc = 0;
    for (size_t off = 0; off < n; off += page)
      acc ^= p[off];
    sink = sink ^ acc ^ p[n - 1];
  }
  (void)sink;
}

/// What the ops of one run share.
struct RunState {
  const ProgramRun &run;
  KernelContext kernels;
  HostKvCache &cache;
  ThreadPool *pool;
  const std::vector<Tensor> *weights;
};

/// One op of a program, resolved at load to what runs it on the CPU.
/// `outs` come preallocated at the op's planned shapes; an implementation
/// writes into them or replaces them with tensors of its own.
class CpuOp {
public:
  virtual ~CpuOp() = default;
  virtual Status run(RunState &rs, const OpInfo &op, const std::vector<Tensor> &ins,
                     std::vector<Tensor> &outs) = 0;
};

/// Any op of the shared kernel library (the interpreter's kernels).
class KernelOp final : public CpuOp {
public:
  explicit KernelOp(Kernel k) : kernel_(k) {}
  Status run(RunState &rs, const OpInfo &op, const std::vector<Tensor> &ins,
             std::vector<Tensor> &outs) override {
    if (Error e = kernel_(rs.kernels, op.attrs, ins, outs))
      return Status::error(e.message());
    return Status::ok();
  }

private:
  Kernel kernel_;
};

/// A matmul whose weight was laid out in panels at load: the library's
/// matmul kernel (shapes, epilogue) reading the panels.
class PanelMatmulOp final : public CpuOp {
public:
  PanelMatmulOp(Kernel k, const float *panels) : kernel_(k), panels_(panels) {}
  Status run(RunState &rs, const OpInfo &op, const std::vector<Tensor> &ins,
             std::vector<Tensor> &outs) override {
    rs.kernels.bPanels = panels_;
    Error e = kernel_(rs.kernels, op.attrs, ins, outs);
    rs.kernels.bPanels = nullptr;
    if (e)
      return Status::error(e.message());
    return Status::ok();
  }

private:
  Kernel kernel_;
  const float *panels_;
};

/// `fused`: the body as one loop over tokens where it compiles to one
/// (cpu/FusedLoop.h); else over pieces of the token axis in parallel where
/// it is row-wise (cpu/FusedRows.h) and the run is long enough; else op by op.
class FusedOp final : public CpuOp {
public:
  FusedOp(const Program *body, const FusedRows *rows, const FusedLoop *loop) : body_(body), rows_(rows), loop_(loop) {}
  Status run(RunState &rs, const OpInfo &op, const std::vector<Tensor> &ins,
             std::vector<Tensor> &outs) override {
    auto t = rs.run.symbols.find("tokens");
    bool planned = true;
    for (const Tensor &o : outs)
      planned = planned && o.valid() && o.rawData();
    // The loop writes a token's results while later tokens' arguments are
    // still to be read: only into buffers apart from every argument.
    if (loop_ && planned && apart(ins, outs)) {
      if (Error e = loop_->run(rs.run.symbols, rs.pool, ins, outs))
        return Status::error(e.message());
      return Status::ok();
    }
    if (rows_ && planned && rs.pool && rs.pool->size() > 1 && t != rs.run.symbols.end() && t->second >= 32) {
      if (Error e = rows_->run(*rs.weights, rs.run.symbols, *rs.pool, ins, outs))
        return Status::error(e.message());
      return Status::ok();
    }
    if (!body_)
      return Status::error("a fused op without its body");
    if (Error e = runFusedBody(*body_, *rs.weights, rs.kernels, ins, outs))
      return Status::error(e.message());
    return Status::ok();
  }

private:
  static bool apart(const std::vector<Tensor> &ins, const std::vector<Tensor> &outs) {
    for (const Tensor &o : outs) {
      const auto *ob = static_cast<const uint8_t *>(o.rawData());
      for (const Tensor &i : ins) {
        const auto *ib = static_cast<const uint8_t *>(i.rawData());
        if (ib && ob < ib + i.numBytes() && ib < ob + o.numBytes())
          return false;
      }
    }
    return true;
  }

  const Program *body_;
  const FusedRows *rows_; // null: not row-wise
  const FusedLoop *loop_; // null: not a loop
};

/// The three cache-backed attention ops. Their operands may be the packed
/// projection (fold-attention-io); the math runs head-major.
class AttentionOp final : public CpuOp {
public:
  enum Kind { Self, Cross, Packed };
  explicit AttentionOp(Kind k) : kind_(k) {}
  Status run(RunState &rs, const OpInfo &op, const std::vector<Tensor> &ins,
             std::vector<Tensor> &outs) override {
    AttentionIo io;
    if (outs.size() != 1)
      return Status::error("bad results");
    if (Status s = unpackAttention(op.attrs, ins, kind_ == Cross ? 1 : 3, io, rs.pool); !s)
      return s;
    const auto &q = io.operands[0].shape();
    std::vector<int64_t> merged{q[2], q[1] * q[3]};
    if (outs[0].rank() == 3)
      merged.insert(merged.begin(), 1);
    std::vector<int64_t> want = io.mergeHeads ? merged : q;
    if (outs[0].shape() != want || outs[0].dtype() != DType::F32)
      return Status::error("the result does not have its planned shape");
    Tensor headMajor = io.mergeHeads ? Tensor(DType::F32, q) : outs[0];
    Status s = kind_ == Self    ? selfAttention(rs.cache, op.attrs, io.operands, headMajor, rs.run.attention, rs.pool)
               : kind_ == Cross ? crossAttention(rs.cache, op.attrs, io.operands, headMajor, rs.run.attention, rs.pool)
                                : packedAttention(op.attrs, io.operands, headMajor, rs.run.attention);
    if (!s)
      return s;
    if (io.mergeHeads)
      mergeHeads(headMajor, outs[0]);
    else
      outs[0] = headMajor; // the same buffer, unless writing it had to copy
    return Status::ok();
  }

private:
  Kind kind_;
};

class CpuExecutor final : public Executor {
public:
  CpuExecutor(std::shared_ptr<const Plan> plan, int threads) : plan_(std::move(plan)) {
    threads_ = threads > 0 ? threads : physicalCores();
  }

  ~CpuExecutor() override {
    for (const auto &[kind, v] : profileMs_)
      std::fprintf(stderr, "genrun: profile: %-28s %10.3f ms over %6lld ops (%.4f ms each)\n", kind.c_str(),
                   v.first, static_cast<long long>(v.second), v.first / std::max<int64_t>(1, v.second));
  }

  Status init() {
    const char *prof = genrt::env::get("GENC_CPU_PROFILE");
    profile_ = prof && std::string(prof) == "1";
    pool_ = std::make_unique<ThreadPool>(threads_);
    // The pool splits each GEMM's columns; BLAS's own threads would spin
    // (sched_yield) on the cores the pool's other work needs.
    setMatmulThreads(1);
    for (const auto &[name, body] : plan_->functions)
      for (const auto &op : body.ops)
        if (!findKernel(op.kind) || op.kind == "fused")
          return Status::error("fused body '" + name + "' op '" + op.kind + "' has no CPU kernel");
    // A bf16 weight that only matmuls read (as their weight) stays bf16: the
    // decode step then streams half the bytes (runtime/cpu/MatmulBf16.h);
    // 4/8-bit codes stay packed (runtime/cpu/MatmulNBits.h).
    const std::vector<char> keep = cpuKeptWeights(*plan_);
    try {
      for (size_t w = 0; w < plan_->weights.size(); ++w) {
        const Tensor &t = plan_->weights[w];
        weights_.push_back(keep[w] ? t : widen(t));
      }
    } catch (const std::bad_alloc &) {
      return Status::error("cannot widen the plan's weights to f32 in host memory");
    }
    if (Status s = packWeights(); !s)
      return s;
    prefault(weights_, panels_);
    // Each body once: may it run over pieces of the token axis?
    // GENC_CPU_FUSED_LOOPS=0 keeps the bodies op by op / in pieces (A/B runs).
    const char *noLoops = genrt::env::get("GENC_CPU_FUSED_LOOPS");
    for (const auto &[name, body] : plan_->functions) {
      if (auto rows = std::make_unique<FusedRows>(); rows->prepare(body, weights_))
        rowWise_[name] = std::move(rows);
      if (noLoops && std::string(noLoops) == "0")
        continue;
      if (auto loop = std::make_unique<FusedLoop>(); loop->prepare(body, weights_))
        loops_[name] = std::move(loop);
    }
    for (const auto &[name, prog] : plan_->programs) {
      Compiled &c = programs_[name];
      for (const OpInfo &op : prog.ops) {
        std::unique_ptr<CpuOp> impl = resolve(prog, op);
        if (!impl)
          return Status::error("plan op '" + op.kind + "' (at \"" + op.loc +
                               "\") has no CPU implementation in this genrun");
        c.ops.push_back(std::move(impl));
      }
    }
    arenaBytes_ = plan_->arenaBytes();
    arena_.reset(static_cast<uint8_t *>(std::aligned_alloc(64, (arenaBytes_ + 63) / 64 * 64 + 64)));
    if (!arena_)
      return Status::error("cannot allocate a " + std::to_string(arenaBytes_) + "-byte arena");
    return HostKvCache::create(plan_->kv, cache_);
  }

  std::string deviceName() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }
  int64_t deviceBytes() const override { return hostMemoryBytes(); }

  int64_t memoryBytes() const override {
    int64_t w = 0;
    for (const auto &t : weights_)
      w += static_cast<int64_t>(t.numBytes());
    return w + plan_->kv.selfBytes() + plan_->kv.crossBytes() + arenaBytes_;
  }

  // The CPU answers Logits only (Executor::chooses): the Session chooses
  // from them on the host.
  Status run(const ProgramRun &run, const ChoiceRequest &request, ChoiceAnswer *answer) override {
    if (request.kind != ChoiceKind::Logits)
      return Status::error("the CPU executor answers logits only");
    const int64_t T = static_cast<int64_t>(run.inputIds.size());
    const bool decode = run.kind == ProgramKind::Decode;
    const int64_t R = decode ? T : static_cast<int64_t>(run.logitRows.size());
    std::vector<Tensor> results;
    Status s = execute(run,
                       {{"input_ids", ids(run.inputIds)},
                        {"positions", ids(run.positions)},
                        {"logit_rows", Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(run.logitRows.size())},
                                                                   run.logitRows)}},
                       results);
    if (!s)
      return s;
    const int64_t vocab = plan_->model.vocabSize;
    if (results.empty() || results[0].dtype() != DType::F32 || results[0].numElements() != R * vocab)
      return Status::error("the plan's " + run.program->name + " does not return [rows, vocab] f32 logits");
    if (answer) {
      answer->reset(request, R, vocab);
      std::memcpy(answer->logits.data(), results[0].data<float>(), static_cast<size_t>(R * vocab) * sizeof(float));
    }
    return Status::ok();
  }

  Status encode(const ProgramRun &run) override {
    std::vector<Tensor> kv;
    if (Status s = execute(run, {{"input_ids", ids(run.inputIds)}, {"positions", ids(run.positions)}}, kv); !s)
      return s;
    const KvLayout &layout = plan_->kv;
    const int64_t S = static_cast<int64_t>(run.inputIds.size());
    if (kv.size() != 2 * layout.crossLayers.size() || !segmentsFit(run.attention.segments, S, layout))
      return Status::error("encode: @encode's results do not match the cross-attention cache");
    for (size_t l = 0; l < layout.crossLayers.size(); ++l)
      for (int i = 0; i < 2; ++i) {
        const Tensor &t = kv[2 * l + i];
        const CrossCacheLayer &L = layout.crossLayers[l];
        if (t.rank() != 4 || t.dtype() != DType::F32 || t.shape() != std::vector<int64_t>{1, L.kvHeads, S, L.headDim})
          return Status::error("encode: @encode's K/V of layer " + std::to_string(l) +
                               " do not match the cross-attention cache");
        for (const SourceSegment &sg : run.attention.segments)
          for (int64_t h = 0; h < L.kvHeads; ++h)
            for (int64_t p = 0; p < sg.len; ++p)
              cache_.writeCross(l, i == 1, sg.entry, h, p, t.data<float>() + (h * S + sg.start + p) * L.headDim);
      }
    return Status::ok();
  }

  bool sharesPrompts() const override { return true; }

  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src, const std::vector<int64_t> &lengths,
                   const std::vector<int64_t> &from) override {
    if (plan_->kv.sharesPrompts())
      return Status::error("copySlots: this plan's beams share their prompt and are reordered by index");
    cache_.copySlots(dst, src, lengths, from);
    return Status::ok();
  }

private:
  struct Compiled {
    std::vector<std::unique_ptr<CpuOp>> ops; // one per program op, resolved at load
  };

  // By the op's class in the one table of op signatures: a fused group runs
  // its body, the cache-backed attention ops run against the KV cache, every
  // other kind is a kernel of the op library.
  std::unique_ptr<CpuOp> resolve(const Program &prog, const OpInfo &op) const {
    const std::string &kind = op.kind;
    if (kind == "matmul" && op.operands.size() >= 2) {
      const ValueInfo &b = prog.values.at(op.operands[1]);
      if (b.storage == Storage::Weight && b.index >= 0 && b.index < static_cast<int32_t>(panels_.size()) && panels_[b.index])
        return std::make_unique<PanelMatmulOp>(findKernel(kind), panels_[b.index].get());
      if (b.storage == Storage::Weight && b.index >= 0 && b.index < static_cast<int32_t>(transposedPanels_.size()) &&
          transposedPanels_[b.index])
        return std::make_unique<PanelMatmulOp>(findKernel(kind), transposedPanels_[b.index].get());
    }
    const OpSignature *sig = findOpSignature(kind);
    if (!sig)
      return nullptr;
    if (sig->cls == OpClass::Fused) {
      std::string body = attrStr(op.attrs, "body");
      auto it = plan_->functions.find(body);
      auto rows = rowWise_.find(body);
      auto loop = loops_.find(body);
      return std::make_unique<FusedOp>(it == plan_->functions.end() ? nullptr : &it->second,
                                       rows == rowWise_.end() ? nullptr : rows->second.get(),
                                       loop == loops_.end() ? nullptr : loop->second.get());
    }
    if (sig->cls == OpClass::CacheAttention)
      return std::make_unique<AttentionOp>(kind == "kv_attention"      ? AttentionOp::Self
                                           : kind == "cross_attention" ? AttentionOp::Cross
                                                                       : AttentionOp::Packed);
    if (Kernel k = findKernel(kind))
      return std::make_unique<KernelOp>(k);
    return nullptr;
  }

  static Tensor ids(const std::vector<int64_t> &v) {
    return Tensor::fromVector<int64_t>(DType::I64, {1, static_cast<int64_t>(v.size())}, v);
  }

  // Where op result `vi` goes: its planned arena buffer at the run's shape,
  // or, for a value the plan stores in a narrower type than the math's f32,
  // a host tensor the result is rounded into (the arena slot is too small
  // for f32 and only the GPU reads it).
  Tensor placeResult(const ValueInfo &vi, const std::map<std::string, int64_t> &symbols) {
    std::vector<int64_t> shape;
    for (const Dim &d : vi.shape) {
      auto v = d.evaluate(symbols);
      if (!v || *v < 0)
        return Tensor();
      shape.push_back(*v);
    }
    DType domain = widen(Tensor(vi.dtype, {})).dtype();
    if (vi.stored != domain)
      return Tensor(domain, shape);
    Tensor view = Tensor::view(domain, shape, arena_.get() + vi.offset);
    return static_cast<int64_t>(view.numBytes()) <= vi.maxBytes ? view : Tensor();
  }

  // Moves a kernel's own result into its arena buffer (unless it wrote
  // there already), or rounds a narrower-stored value as the GPU's store would.
  Status settle(const ValueInfo &vi, const Tensor &planned, Tensor &result) {
    if (vi.stored == DType::F16 || vi.stored == DType::BF16) {
      if (result.dtype() == DType::F32) { // in place: no two copies per op per run
        const uint8_t *raw = static_cast<const uint8_t *>(result.rawData());
        const bool inArena = raw >= arena_.get() && raw < arena_.get() + arenaBytes_;
        // The arena is the executor's own memory; anything else is copied
        // first (it may be an operand the op passed through).
        float *x = inArena ? const_cast<float *>(result.data<float>()) : result.data<float>();
        const int64_t n = result.numElements();
        if (vi.stored == DType::BF16)
          for (int64_t i = 0; i < n; ++i)
            x[i] = bf16ToFloat(floatToBf16(x[i]));
        else
          for (int64_t i = 0; i < n; ++i)
            x[i] = halfToFloat(floatToHalf(x[i]));
      }
      return Status::ok();
    }
    uint8_t *at = arena_.get() + vi.offset;
    if (result.rawData() == at && planned.valid())
      return Status::ok(); // written in place
    if (static_cast<int64_t>(result.numBytes()) > vi.maxBytes)
      return Status::error("a result of " + std::to_string(result.numBytes()) +
                           " bytes exceeds its planned buffer of " + std::to_string(vi.maxBytes));
    if (result.numBytes())
      std::memmove(at, result.rawData(), result.numBytes());
    result = Tensor::view(result.dtype(), result.shape(), at);
    return Status::ok();
  }

  // Runs a program over the arena; `results` get its outputs.
  Status execute(const ProgramRun &run, const std::map<std::string, Tensor> &args,
                 std::vector<Tensor> &results) {
    const Program &prog = *run.program;
    const Compiled &compiled = programs_.at(prog.name);
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

    RunState rs{run, KernelContext(), cache_, pool_.get(), &weights_};
    rs.kernels.pool = pool_.get();
    rs.kernels.symbols = &run.symbols;
    rs.kernels.runBody = [this, &rs](const std::string &b, const std::vector<Tensor> &in,
                                     std::vector<Tensor> &out) {
      return runFusedBody(plan_->functions.at(b), weights_, rs.kernels, in, out); // loader checked b
    };
    std::vector<int64_t> ranks;
    rs.kernels.resultRanks = &ranks;
    std::vector<Tensor> ins, outs, planned;
    for (size_t k = 0; k < prog.ops.size(); ++k) {
      const OpInfo &op = prog.ops[k];
      ins.clear();
      for (int32_t v : op.operands)
        ins.push_back(vals[v]);
      outs.clear();
      ranks.clear();
      for (int32_t r : op.results) {
        outs.push_back(placeResult(prog.values[r], run.symbols));
        ranks.push_back(static_cast<int64_t>(prog.values[r].shape.size()));
      }
      planned = outs;
      auto t0 = std::chrono::steady_clock::now();
      Status s = compiled.ops[k]->run(rs, op, ins, outs);
      for (size_t i = 0; s && i < outs.size(); ++i)
        s = settle(prog.values[op.results[i]], planned[i], outs[i]);
      if (profile_) {
        auto &slot = profileMs_[prog.name + " " + op.kind];
        slot.first += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        ++slot.second;
      }
      if (!s)
        return Status::error("op '" + op.kind + "' at \"" + op.loc + "\": " + s.message());
      for (size_t i = 0; i < outs.size(); ++i)
        vals[op.results[i]] = outs[i];
    }
    results.clear();
    for (int32_t o : prog.outputs)
      results.push_back(vals[o]);
    return Status::ok();
  }

  struct Free {
    void operator()(uint8_t *p) const { std::free(p); }
  };
  struct FreeFloats {
    void operator()(float *p) const { std::free(p); }
  };

  // The weights only matmuls read as b (not transposed), f32 [K, N], into
  // panels (runtime/cpu/MatmulPanels.h): a prefill's GEMMs then stream them
  // as they lie, where BLAS packed each weight again on every call.
  Status packWeights() {
    panels_.resize(weights_.size());
    if (!havePanelKernels())
      return Status::ok();
    const std::vector<char> ok = weightsReadOnlyBy(*plan_, [](const OpInfo &op, size_t i) {
      return op.kind == "matmul" && i == 1 && attrInt(op.attrs, "transpose_b", 0) == 0;
    });
    for (size_t w = 0; w < weights_.size(); ++w) {
      const Tensor &t = weights_[w];
      if (!ok[w] || t.dtype() != DType::F32 || t.rank() != 2 || t.numElements() == 0)
        continue;
      const int64_t K = t.shape()[0], N = t.shape()[1];
      const size_t bytes = (static_cast<size_t>(panelFloats(K, N)) * sizeof(float) + 63) / 64 * 64;
      float *p = static_cast<float *>(std::aligned_alloc(64, bytes));
      if (!p)
        return Status::error("cannot allocate " + std::to_string(bytes) + " bytes for a weight's panels");
      packPanels(t.data<float>(), K, N, p);
      panels_[w].reset(p);
    }
    // A weight matmuls read as b transposed (a tied embedding as the LM
    // head; gathers read it too, so the original stays): its [K, N] view in
    // panels as well. Then every row of a product is one FMA chain over k
    // whatever the rows beside it (BLAS's sgemv for one row and sgemm for
    // several round differently): a row's logits never depend on its
    // batch-mates (docs/serving.md).
    std::vector<char> transposed(weights_.size(), 0), plain(weights_.size(), 0);
    for (const auto &[name, prog] : plan_->programs)
      for (const OpInfo &op : prog.ops)
        if (op.kind == "matmul" && op.operands.size() >= 2) {
          const ValueInfo &b = prog.values[op.operands[1]];
          if (b.storage == Storage::Weight && b.index >= 0 && b.index < static_cast<int32_t>(weights_.size()))
            (attrInt(op.attrs, "transpose_b", 0) != 0 ? transposed : plain)[size_t(b.index)] = 1;
        }
    transposedPanels_.resize(weights_.size());
    for (size_t w = 0; w < weights_.size(); ++w) {
      const Tensor &t = weights_[w];
      if (!transposed[w] || plain[w] || panels_[w] || t.dtype() != DType::F32 || t.rank() != 2 ||
          t.numElements() == 0)
        continue;
      const int64_t N = t.shape()[0], K = t.shape()[1];
      const size_t bytes = (static_cast<size_t>(panelFloats(K, N)) * sizeof(float) + 63) / 64 * 64;
      float *p = static_cast<float *>(std::aligned_alloc(64, bytes));
      if (!p)
        return Status::error("cannot allocate " + std::to_string(bytes) + " bytes for a weight's panels");
      packPanelsTransposed(t.data<float>(), K, N, p);
      transposedPanels_[w].reset(p);
    }
    return Status::ok();
  }
  std::shared_ptr<const Plan> plan_;
  std::map<std::string, Compiled> programs_;
  std::vector<Tensor> weights_;
  /// Per weight: its panels where only matmuls read it as b[K, N] (AVX-512
  /// or AVX2 CPUs); the mapped original is then never read (nor paged in) again.
  std::vector<std::unique_ptr<float, FreeFloats>> panels_;
  /// Per weight read transposed by matmuls (and by other ops): panels of
  /// its transpose, beside the original.
  std::vector<std::unique_ptr<float, FreeFloats>> transposedPanels_;
  int64_t arenaBytes_ = 0;
  std::unique_ptr<uint8_t, Free> arena_;
  HostKvCache cache_;
  int threads_ = 1;
  std::unique_ptr<ThreadPool> pool_;
  std::map<std::string, std::unique_ptr<FusedRows>> rowWise_; // bodies that run over token pieces
  std::map<std::string, std::unique_ptr<FusedLoop>> loops_;   // bodies compiled to one loop over tokens
  bool profile_ = false; // GENC_CPU_PROFILE=1: wall time per program and op kind, at exit
  std::map<std::string, std::pair<double, int64_t>> profileMs_;
};

} // namespace
} // namespace cpu

std::unique_ptr<Executor> makeCpuExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                          Status &err) {
  if (!(err = checkHostMemory(cpuBytesNeeded(*plan), "the CPU executor's weights, caches, arena and logits")))
    return nullptr;
  auto e = std::make_unique<cpu::CpuExecutor>(std::move(plan), opts.threads);
  err = e->init();
  if (!err)
    return nullptr;
  return e;
}

} // namespace genrt
