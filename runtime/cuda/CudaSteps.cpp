#include "runtime/cuda/CudaSteps.h"

#include "runtime/Env.h"
#include "runtime/OpSignatures.h"
#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/TokenAbi.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace genrt::cuda {
namespace {

int64_t elementsAt(const Shape &shape, const std::map<std::string, int64_t> &symbols) {
  int64_t n = 1;
  for (const Dim &d : shape) {
    auto v = d.evaluate(symbols);
    if (!v || *v < 0)
      return -1;
    n *= *v;
  }
  return n;
}

Status launch(StepContext &ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, void **args,
              const std::string &what, unsigned shared = 0, unsigned threads = kAttnThreads) {
  if (gx == 0 || gy == 0 || gz == 0)
    return Status::ok();
  Status s = ctx.dev->launch(fn, gx, gy, gz, threads, 1, shared, ctx.stream, args, what);
  if (s && ctx.syncEachStep)
    s = ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
  return s;
}

// Where each value of a program lives on the device, and how it is stored.
struct ValueMap {
  const Program &prog;
  StepContext &ctx;
  const std::vector<CUdeviceptr> &weights;
  CUdeviceptr ptr(int32_t v) const {
    const ValueInfo &vi = prog.values[v];
    switch (vi.storage) {
    case Storage::Weight: return weights[vi.index];
    case Storage::Arena: return ctx.arena + vi.offset;
    case Storage::Argument: return ctx.arguments[prog.argumentNames[vi.index]];
    default: return 0;
    }
  }
  DType stored(int32_t v) const {
    const ValueInfo &vi = prog.values[v];
    return vi.storage == Storage::Weight ? ctx.plan->weights[vi.index].dtype() : vi.stored;
  }
  bool isWeight(int32_t v) const { return prog.values[v].storage == Storage::Weight; }
};

class GemmStep;

// A fused group: its generated kernel — or nothing, where the matmul right
// after it runs its row itself, or the one before ends in it (GemmStep::choice).
class FusedStep final : public Step {
public:
  FusedLaunch kernel;
  std::vector<CUdeviceptr> pointers;
  std::vector<Shape> results;
  /// The GEMV step that may run this one's work: the matmul right after
  /// (this is its `before`) or right before (its `then`).
  const GemmStep *absorbedBy = nullptr;
  bool isBefore = false;
  bool absorbed(const StepContext &ctx, const ProgramRun &run) const;
  Status run(StepContext &ctx, const ProgramRun &run) override;
  std::string profileKind(const StepContext &ctx, const ProgramRun &run) const override;
};

// matmul(a, W[, bias]) {epilogue, transpose_b}: a generated GEMV kernel for
// up to 8 rows where the weight lies [N, K] (runtime/cuda/GemvAbi.h), else
// one cuBLASLt call.
class GemmStep final : public Step {
public:
  GemmShape shape;
  CUdeviceptr a = 0, b = 0, bias = 0, y = 0;
  Shape aShape;
  CUfunction gemv[4] = {}; // rows <= 1, 2, 4, 8
  /// One-row entries that also run the fused step before (its row kernel,
  /// whose result is `a`) and/or the one after (the elementwise GLU over
  /// the product, into `thenOut`): fused[before][then] (GemvAbi.h).
  CUfunction fused[2][2] = {};
  const FusedStep *before = nullptr, *then = nullptr;
  const OpInfo *beforeOp = nullptr;
  CUdeviceptr thenOut = 0;
  int64_t staticShared = 0; // the static shared bytes of the entries with `before`

  /// Which neighbours this run takes into its GEMV: one row, every result
  /// of the body before one row too, an entry for the pair.
  std::pair<bool, bool> choice(const StepContext &ctx, const ProgramRun &run) const {
    if (!ctx.gemvFusion || !gemv[0] || (!before && !then) || elementsAt(aShape, run.symbols) != shape.K)
      return {false, false};
    bool withBefore = before && (ctx.gemvFusion & 1), withThen = then && (ctx.gemvFusion & 2);
    if (withBefore) {
      for (const Shape &r : before->results)
        if (r.empty() || !r.back().isConstant() || elementsAt(r, run.symbols) != r.back().constant())
          withBefore = false;
      // The body's dynamic shared memory beside the staged row, within
      // what a launch gets without opting in.
      auto shared = before->kernel.info().sharedFloats.evaluate(run.symbols);
      withBefore = withBefore && shared && *shared >= 0 && staticShared + *shared * 4 <= kGemvSharedLimit;
    }
    if (!fused[withBefore][withThen]) { // an entry for one of the two (older plans, or a body that did not fit)
      if (withBefore && fused[1][0])
        withThen = false;
      else if (withThen && fused[0][1])
        withBefore = false;
    }
    return fused[withBefore][withThen] ? std::make_pair(withBefore, withThen) : std::make_pair(false, false);
  }

  std::string profileKind(const StepContext &ctx, const ProgramRun &run) const override {
    auto [withBefore, withThen] = choice(ctx, run);
    return withBefore && withThen ? "gemm between fused"
           : withBefore           ? "gemm after fused"
           : withThen             ? "gemm then fused"
                                  : kind;
  }

  Status runFused(StepContext &ctx, const ProgramRun &run, bool withBefore, bool withThen) {
    const bool bf = withBefore, t = withThen;
    GencGemvParams p{a, b, bias, t ? thenOut : y, 1, shape.K, shape.N};
    GencGemvPrologue q{};
    int64_t shared = 0;
    std::string name = "the GEMV of " + what;
    if (bf) {
      const KernelInfo &k = before->kernel.info();
      for (size_t i = 0; i < k.symbols.size(); ++i) {
        auto it = run.symbols.find(k.symbols[i]);
        if (it == run.symbols.end())
          return Status::error(what + ": kernel '" + k.name + "' needs the symbol '" + k.symbols[i] + "'");
        q.sym[i] = it->second;
      }
      for (size_t i = 0; i < before->pointers.size(); ++i)
        q.ptr[i] = before->pointers[i];
      shared = *k.sharedFloats.evaluate(run.symbols) * 4;
      name += " after '" + k.name + "'";
    }
    if (t)
      name += " then '" + then->kernel.info().name + "'";
    void *args[] = {&p, &q};
    const int64_t outputs = t ? shape.N / 2 : shape.N;
    const unsigned grid = static_cast<unsigned>((outputs + kGemvThreads / 32 - 1) / (kGemvThreads / 32));
    return ctx.dev->launch(fused[bf][t], grid, 1, 1, kGemvThreads, 1, static_cast<unsigned>(shared), ctx.stream,
                           args, name);
  }

  Status run(StepContext &ctx, const ProgramRun &run) override {
    int64_t n = elementsAt(aShape, run.symbols);
    if (n < 0 || n % shape.K)
      return Status::error(what + ": the input's shape does not evaluate");
    const int64_t M = n / shape.K;
    Status s = Status::ok();
    if (auto [withBefore, withThen] = choice(ctx, run); withBefore || withThen) {
      s = runFused(ctx, run, withBefore, withThen);
    } else if (M >= 1 && M <= ctx.gemvRows && gemv[0]) {
      GencGemvParams p{a, b, bias, y, M, shape.K, shape.N};
      void *args[] = {&p};
      int which = M <= 1 ? 0 : M <= 2 ? 1 : M <= 4 ? 2 : 3;
      unsigned grid = static_cast<unsigned>((shape.N + kGemvThreads / 32 - 1) / (kGemvThreads / 32));
      s = ctx.dev->launch(gemv[which], grid, 1, 1, kGemvThreads, 1, 0, ctx.stream, args, "the GEMV of " + what);
    } else if (M > 0) {
      s = ctx.gemm->run(shape, M, a, b, bias, y, ctx.stream);
      if (!s)
        s = Status::error(what + ": " + s.message());
    }
    if (s && ctx.syncEachStep)
      return ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
    return s;
  }
};

// The GEMV kernels of a matmul, where its weight lies [N, K] and the rows
// are whole 16-byte words (else the step keeps cuBLASLt alone).
Status prepareGemv(const OpInfo &op, const KernelModule &mod, GemmStep &g) {
  std::string family = attrStr(op.attrs, "gpu_gemv", "");
  if (family.empty() || !g.shape.transB)
    return Status::ok();
  const int64_t ea = static_cast<int64_t>(dtypeSize(g.shape.a)), eb = static_cast<int64_t>(dtypeSize(g.shape.b));
  const int64_t wordA = 16 / eb * ea; // a's bytes per weight word
  if ((g.shape.K * eb) % 16 || (g.shape.K * ea) % wordA || g.a % 16 || g.b % 16)
    return Status::ok();
  const char *rows[] = {"_m1", "_m2", "_m4", "_m8"};
  for (int i = 0; i < 4; ++i)
    if (Status s = mod.function(family + rows[i], g.gemv[i]); !s)
      return s;
  return Status::ok();
}

bool FusedStep::absorbed(const StepContext &ctx, const ProgramRun &run) const {
  if (!absorbedBy)
    return false;
  auto [b, t] = absorbedBy->choice(ctx, run);
  return isBefore ? b : t;
}

std::string FusedStep::profileKind(const StepContext &ctx, const ProgramRun &run) const {
  return absorbed(ctx, run) ? "fused (run by a gemm)" : kind;
}

Status FusedStep::run(StepContext &ctx, const ProgramRun &run) {
  if (absorbed(ctx, run))
    return Status::ok();
  Status s = kernel.launch(*ctx.dev, run.symbols, pointers, ctx.stream);
  if (s && ctx.syncEachStep)
    s = ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
  return s;
}

// Whether a buffer `w` writes meets one `r` reads or writes (device
// ranges at the program's maximum shapes; an unsized one meets everything).
bool overlaps(const ValueMap &vm, int32_t w, int32_t r) {
  auto range = [&](int32_t v) {
    const int64_t n = elementsAt(vm.prog.values[v].shape, vm.prog.maxSymbols);
    const CUdeviceptr at = vm.ptr(v);
    return std::make_pair(at, n < 0 ? ~CUdeviceptr(0) : at + static_cast<CUdeviceptr>(n) * dtypeSize(vm.stored(v)));
  };
  auto [a0, a1] = range(w);
  auto [b0, b1] = range(r);
  return a0 < b1 && b0 < a1;
}

// The matmul `op` reads result r of the fused op `prev`, whose step comes
// right before, and nothing else reads it: where the plan has the GEMV entry
// that runs that body first, `g` takes it. Every block of it reads the
// body's operands while others write the product (and block 0 the body's
// other results), so none of those may share bytes (genc's plan-memory
// keeps them apart; an older plan may not). Its shared row must hold K
// elements of a (a plan names its kernels; it is not trusted to size them).
Status prepareAfter(const ValueMap &vm, const OpInfo &op, const OpInfo &prev, FusedStep &f, const KernelModule &mod,
                    const Device &dev, GemmStep &g) {
  const Program &prog = vm.prog;
  if (!g.gemv[0] || g.shape.K * static_cast<int64_t>(dtypeSize(g.shape.a)) > kGemvPrologueBytes)
    return Status::ok();
  const int32_t a = op.operands[0];
  auto r = std::find(prev.results.begin(), prev.results.end(), a);
  if (r == prev.results.end() || std::count(prog.outputs.begin(), prog.outputs.end(), a))
    return Status::ok();
  size_t uses = 0;
  for (const OpInfo &o : prog.ops)
    uses += std::count(o.operands.begin(), o.operands.end(), a);
  const KernelInfo &k = f.kernel.info();
  if (uses != 1 || k.mode != "rows" || k.blockSize > kGemvThreads || k.symbols.size() > kGemvPrologueSymbols ||
      f.pointers.size() > kGemvProloguePointers ||
      f.pointers.size() != static_cast<size_t>(k.numInputs + k.numOutputs) ||
      (op.operands.size() > 2 && !vm.isWeight(op.operands[2])))
    return Status::ok();
  std::vector<int32_t> writes{op.results.at(0)};
  for (int32_t v : prev.results)
    if (v != a)
      writes.push_back(v);
  for (size_t i = 0; i < writes.size(); ++i) {
    for (int32_t v : prev.operands)
      if (!vm.isWeight(v) && overlaps(vm, writes[i], v))
        return Status::ok();
    for (size_t j = i + 1; j < writes.size(); ++j)
      if (overlaps(vm, writes[i], writes[j]))
        return Status::ok();
  }
  const std::string name = gemvEntryName(attrStr(op.attrs, "gpu_gemv", ""), k.name, r - prev.results.begin(), "");
  CUfunction fn = nullptr;
  if (!mod.function(name, fn))
    return Status::ok(); // a plan from a genc without these entries
  int staticBytes = 0;
  if (Status s = dev.check(dev.api->cuFuncGetAttribute(&staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), name.c_str());
      !s)
    return s;
  // The staged row (16-byte aligned) and the row function's 32 floats.
  const int64_t rowBytes = (g.shape.K * static_cast<int64_t>(dtypeSize(g.shape.a)) + 15) / 16 * 16;
  if (staticBytes < rowBytes + 128)
    return Status::error("kernel '" + name + "' holds " + std::to_string(staticBytes) +
                         " bytes of shared memory, not the matmul's row of " + std::to_string(rowBytes) +
                         " and 128 more: the plan's kernels do not match its ops");
  g.staticShared = staticBytes;
  g.fused[1][0] = fn;
  g.before = &f;
  g.beforeOp = &prev;
  f.absorbedBy = &g;
  f.isBefore = true;
  return Status::ok();
}

// The elementwise fused op `op` reads only the product of `mm`, whose step
// comes right before, and nothing else reads that product: where the plan
// has the GEMV entries that end in this body (a GLU), `g` takes them. The
// body's result must not share bytes with what the GEMV's blocks read (its
// a, or the body before and its results where it runs that too).
Status prepareThen(const ValueMap &vm, const OpInfo &mm, const OpInfo &op, FusedStep &f, const KernelModule &mod,
                   GemmStep &g) {
  const Program &prog = vm.prog;
  const int32_t y = mm.results.at(0);
  if (!g.gemv[0] || g.shape.N % 2 || op.operands.size() != 1 || op.operands[0] != y || op.results.size() != 1 ||
      std::count(prog.outputs.begin(), prog.outputs.end(), y))
    return Status::ok();
  size_t uses = 0;
  for (const OpInfo &o : prog.ops)
    uses += std::count(o.operands.begin(), o.operands.end(), y);
  const KernelInfo &k = f.kernel.info();
  const int32_t out = op.results[0];
  // The GEMV writes N / 2 elements a row to the body's result, in its dtype.
  const Shape &os = prog.values[out].shape;
  if (uses != 1 || k.mode != "elementwise" || os.empty() || !os.back().isConstant() ||
      os.back().constant() * 2 != g.shape.N || k.outputDTypes.size() != 1 || vm.stored(out) != k.outputDTypes[0] ||
      (mm.operands.size() > 2 && !vm.isWeight(mm.operands[2])))
    return Status::ok();
  std::vector<int32_t> reads{mm.operands[0]};
  if (g.before) {
    reads.insert(reads.end(), g.beforeOp->operands.begin(), g.beforeOp->operands.end());
    reads.insert(reads.end(), g.beforeOp->results.begin(), g.beforeOp->results.end());
  }
  for (int32_t v : reads)
    if (!vm.isWeight(v) && overlaps(vm, out, v))
      return Status::ok();
  const std::string fam = attrStr(mm.attrs, "gpu_gemv", "");
  CUfunction fn = nullptr;
  if (mod.function(gemvEntryName(fam, "", 0, k.name), fn))
    g.fused[0][1] = fn;
  if (g.before) {
    const KernelInfo &kb = g.before->kernel.info();
    const size_t r = std::find(g.beforeOp->results.begin(), g.beforeOp->results.end(), mm.operands[0]) -
                     g.beforeOp->results.begin();
    if (mod.function(gemvEntryName(fam, kb.name, r, k.name), fn))
      g.fused[1][1] = fn;
  }
  if (!g.fused[0][1] && !g.fused[1][1])
    return Status::ok(); // a plan from a genc without these entries
  g.then = &f;
  g.thenOut = vm.ptr(out);
  f.absorbedBy = &g;
  f.isBefore = false;
  return Status::ok();
}

// A view op (reshape, squeeze, ...): the planner gave the result its own
// buffer, so the bytes are copied.
class CopyStep final : public Step {
public:
  CUdeviceptr src = 0, dst = 0;
  Shape shape;
  int64_t elementBytes = 0;
  Status run(StepContext &ctx, const ProgramRun &run) override {
    int64_t n = elementsAt(shape, run.symbols);
    if (n < 0)
      return Status::error(what + ": the result's shape does not evaluate");
    if (n == 0 || src == dst)
      return Status::ok();
    return ctx.dev->check(ctx.dev->api->cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(n * elementBytes), ctx.stream),
                          what.c_str());
  }
};

// fn may take `bytes` of dynamic shared memory (above the default 48 KB).
Status allowShared(const Device &dev, CUfunction fn, long long bytes) {
  return dev.check(dev.api->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               static_cast<int>(bytes)),
                   "cuFuncSetAttribute");
}

// A layer's K or V cache rows as attn_N_stream's TMA map: [rows][D] 16-bit
// elements, boxes of 64 rows x 64 dims (128 bytes), 128-byte swizzle.
Status encodeRows(const Device &dev, CUdeviceptr base, int64_t rows, int64_t D, GencTensorMap &out) {
  static_assert(sizeof(GencTensorMap) == sizeof(CUtensorMap), "GencTensorMap is a CUtensorMap");
  if (rows <= 0 || rows >= (int64_t(1) << 31) || base % 16)
    return Status::error("has a cache the TMA decode kernel cannot map (" + std::to_string(rows) + " rows)");
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(D), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(D * 2)};
  const cuuint32_t box[2] = {64, 64}, step[2] = {1, 1};
  return dev.check(dev.api->cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap *>(&out), CU_TENSOR_MAP_DATA_TYPE_UINT16,
                                                   2, reinterpret_cast<void *>(base), dims, strides, box, step,
                                                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                   "cuTensorMapEncodeTiled");
}

// kv_attention / cross_attention / packed_attention: the op's kernel family.
class AttentionStep final : public Step {
public:
  /// The decode kernel's splits for T tokens: the count whose blocks finish
  /// soonest at the longest context the cache holds (waves of resident
  /// blocks x (tiles a split + about one for a block's start, measured: one
  /// tile a block at batch 256 was 1.8x slower than four); a split more
  /// costs about half a tile for its partials and merge). Fixed per T, so a
  /// captured graph replays at any length: the kernel takes min(S, the
  /// token's tiles) splits itself.
  int64_t decodeSplits(int64_t T, int64_t smCount, int64_t maxS, int64_t perSm) const {
    const int64_t slots = std::max<int64_t>(1, perSm * smCount), blocks = std::max<int64_t>(1, T * decodeGridY);
    int64_t best = 1;
    double bestCost = 0;
    for (int64_t S = 1; S <= std::min(maxS, decodeTiles); ++S) {
      const int64_t per = (decodeTiles + S - 1) / S, used = (decodeTiles + per - 1) / per;
      const double cost = static_cast<double>((blocks * used + slots - 1) / slots * (per + 1)) + (S > 1 ? 0.5 : 0.0);
      if (S == 1 || cost < bestCost) {
        best = S;
        bestCost = cost;
      }
    }
    return best;
  }
  CUfunction prologue = nullptr, attend = nullptr, append = nullptr;
  /// The Flash-Decoding kernel for decode steps (none in plans from an
  /// older genc, or for shapes it does not take): its grid's y and shared
  /// bytes.
  CUfunction decode = nullptr, merge = nullptr;
  /// The TMA decode kernel (sm_90, long contexts; kStreamThreads threads,
  /// one block an SM), which decode steps take instead where `useStream`.
  CUfunction stream = nullptr;
  unsigned streamShared = 0;
  bool useStream = false;
  /// The tensor-core kernel for runs of many tokens (16-bit caches; none
  /// in plans from an older genc) and its dynamic shared bytes.
  CUfunction prefill = nullptr;
  unsigned prefillShared = 0;
  int64_t decodeGridY = 0, decodeTiles = 1, decodePerSm = 1;
  /// The next GEMVs' weight ranges (start, bytes) the merge prefetches into
  /// L2, in order, up to GENC_CUDA_L2_PREFETCH_MB in all.
  std::pair<CUdeviceptr, int64_t> pf[3] = {};
  bool decodeRows = false; // the decode kernel computes its q, k, v rows (no prologue)
  unsigned decodeShared = 0;
  GencAttnParams base{};
  int64_t heads = 0, kvHeads = 0, headDim = 0, gridY = 0;
  bool cross = false;
  /// Self-attention whose cache rows a later token of a run may need: a
  /// rolling window shorter than the plan's length.
  bool selfAttention = false, rolling = false;
  Status run(StepContext &ctx, const ProgramRun &run) override {
    GencAttnParams p = base;
    const int64_t T = static_cast<int64_t>(run.inputIds.size());
    p.tokens = T;
    if (selfAttention) {
      p.shards = ctx.tree.shards;
      p.shard = ctx.tree.shard;
      p.lseOut = ctx.tree.nccl ? ctx.tree.lse : 0;
    }
    const bool useDecode = decode && run.kind == ProgramKind::Decode;
    // A self-attention run takes the prefill kernel only where every key can
    // come from the cache (no two tokens of the run on one rolling row) and
    // no other GPU holds part of it.
    const bool usePrefill = prefill && run.kind != ProgramKind::Decode && ctx.tileCount > 0 &&
                            (!selfAttention || (!rolling && !ctx.tree.nccl && ctx.tree.shards <= 1));
    const int64_t maxS = std::max<int64_t>(
        1, std::min<int64_t>(useDecode ? 256 : 64, ctx.partialRows / std::max<int64_t>(1, T * heads)));
    int64_t S = 1;
    // (Not over a sharded cache: tree attention's runs were verified on the
    // decode kernel only.)
    const bool streams = useDecode && useStream && ctx.tree.shards <= 1;
    if (useDecode) {
      S = decodeSplits(T, ctx.dev->smCount, maxS, streams ? 1 : decodePerSm);
      // GENC_CUDA_SPLITS=N: the decode kernel's splits fixed (A/B sweeps).
      static const int64_t forced = [] {
        const char *e = genrt::env::get("GENC_CUDA_SPLITS");
        return e ? std::atoll(e) : 0;
      }();
      if (forced > 0)
        S = std::min(forced, maxS);
    } else { // enough blocks to fill the GPU twice over
      const int64_t blocks = std::max<int64_t>(1, T * gridY);
      S = std::clamp<int64_t>((2 * ctx.dev->smCount + blocks - 1) / blocks, 1, maxS);
    }
    p.splits = S;
    p.scratch = ctx.scratch;
    // The workspace holds the log-sum-exps [rows], then the partials [rows, D].
    p.lse = ctx.partial;
    p.partial = ctx.partial + static_cast<CUdeviceptr>(ctx.partialRows) * 4;
    p.tickets = ctx.tickets;
    p.places = ctx.places;
    p.crossLengths = ctx.crossLengths;
    // The attend appends each token's k, v once its head's splits are done,
    // unless a token of a multi-token run could overwrite a rolling row that
    // another token of the run still reads: then a launch of its own, after.
    const bool appendLater = selfAttention && rolling && run.kind != ProgramKind::Decode;
    p.append = selfAttention && !appendLater;
    // The decode kernel reads every key from the cache: the prologue writes
    // the step's k, v there first.
    if ((useDecode || usePrefill) && selfAttention)
      p.append = 2;
    p.tiles = ctx.tiles;
    void *args[] = {&p};
    unsigned tx = static_cast<unsigned>(T);
    const int64_t rows = (cross ? heads : heads + 2 * kvHeads), rb = gencAttnPrologueRows(headDim);
    // A decode kernel from this genc norms and rotates its own rows.
    if (!(useDecode && decodeRows))
      if (Status s = launch(ctx, prologue, std::min(tx, 65535u), static_cast<unsigned>((rows + rb - 1) / rb), 1,
                            args, what + " (prologue)");
          !s)
        return s;
    if (useDecode) {
      // GENC_CUDA_DECODE_WARMUP=N (a diagnostic): N more launches before the
      // real one, each writing what it writes (the step's k, v; partials), so
      // its GENC_ATTN_TRACE stamps show the kernel with its code already in
      // the SMs' instruction caches: how much of its time is instruction fetch.
      static const int warmups = [] {
        const char *e = genrt::env::get("GENC_CUDA_DECODE_WARMUP");
        return e ? std::clamp(std::atoi(e), 0, 8) : 0;
      }();
      for (int i = 0; i <= warmups; ++i)
        if (Status s = streams ? launch(ctx, stream, tx, static_cast<unsigned>(decodeGridY), static_cast<unsigned>(S),
                                        args, what + " (stream)", streamShared, kStreamThreads)
                               : launch(ctx, decode, tx, static_cast<unsigned>(decodeGridY), static_cast<unsigned>(S),
                                        args, what + " (decode)", decodeShared);
            !s || (i == warmups && S == 1))
          return s;
      // O's weight first, the rest of the budget to the next GEMV (a GLU's
      // gate and up halves alike). One token only: at batch 8 the decode
      // kernel keeps HBM busier and the prefetch cost 1% (session 13).
      const int64_t budget = T == 1 ? ctx.l2PrefetchBytes : 0;
      const int64_t o = std::min(budget, pf[0].second), rest = budget - o;
      const int64_t bytes[3] = {o, std::min(pf[2].second ? rest / 2 : rest, pf[1].second),
                                std::min(rest / 2, pf[2].second)};
      for (int i = 0; i < 3; ++i) {
        p.pf[i] = pf[i].first;
        p.pfBytes[i] = bytes[i] / 16 * 16;
      }
      return launch(ctx, merge, tx, static_cast<unsigned>(heads), 1, args, what + " (merge)", 0, kMergeThreads);
    }
    if (usePrefill)
      return launch(ctx, prefill, static_cast<unsigned>(ctx.tileCount), static_cast<unsigned>(heads), 1, args,
                    what + " (prefill)", prefillShared);
    if (Status s = launch(ctx, attend, tx, static_cast<unsigned>(gridY), static_cast<unsigned>(S), args,
                          what + " (attend)");
        !s)
      return s;
    if (!appendLater)
      return Status::ok();
    return launch(ctx, append, tx, static_cast<unsigned>(kvHeads), 1, args, what + " (append)");
  }
};

// Tree attention's combine after a self-attention op (its output o and
// log-sum-exp on this GPU): M = AllReduce_max(lse), packed = [w·o | w] with
// w = exp(lse − M), AllReduce_sum(packed), out = packed[:D] / packed[D]
// (Shyam et al., 2024): two collectives, the second one packed, in f32, on
// the step's stream (inside the decode step's CUDA graph).
class TreeCombineStep final : public Step {
public:
  CUfunction weigh = nullptr, finish = nullptr;
  GencAttnParams base{};
  int64_t heads = 0, headDim = 0;
  Status run(StepContext &ctx, const ProgramRun &run) override {
    const StepContext::Tree &tr = ctx.tree;
    if (!tr.comm)
      return Status::error(what + ": the GPU group was aborted");
    GencAttnParams p = base;
    const int64_t T = static_cast<int64_t>(run.inputIds.size()), rows = T * heads;
    p.tokens = T;
    p.lseOut = tr.lse;
    p.lseMax = tr.lseMax;
    p.packed = tr.packed;
    p.shards = tr.shards;
    p.shard = tr.shard;
    p.combine = tr.combine;
    void *args[] = {&p};
    const NcclApi &n = *tr.nccl;
    if (tr.combine == 1) { // [o | lse] of every GPU to every GPU, in place
      const size_t part = static_cast<size_t>(rows * (headDim + 1));
      if (Status s = launch(ctx, weigh, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args,
                            what + " (pack)");
          !s)
        return s;
      if (Status s = n.check(n.allGather(reinterpret_cast<float *>(tr.packed) + tr.shard * part,
                                         reinterpret_cast<void *>(tr.packed), part, kNcclFloat32, tr.comm, ctx.stream),
                             "ncclAllGather (the GPUs' outputs and log-sum-exps)");
          !s)
        return Status::error(what + ": " + s.message());
      return launch(ctx, finish, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args, what + " (combine)");
    }
    if (Status s = n.check(n.allReduce(reinterpret_cast<void *>(tr.lse), reinterpret_cast<void *>(tr.lseMax),
                                       static_cast<size_t>(rows), kNcclFloat32, kNcclMax, tr.comm, ctx.stream),
                           "ncclAllReduce (max of the log-sum-exps)");
        !s)
      return Status::error(what + ": " + s.message());
    if (Status s = launch(ctx, weigh, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args,
                          what + " (weigh)");
        !s)
      return s;
    if (Status s = n.check(n.allReduce(reinterpret_cast<void *>(tr.packed), reinterpret_cast<void *>(tr.packed),
                                       static_cast<size_t>(rows * (headDim + 1)), kNcclFloat32, kNcclSum, tr.comm,
                                       ctx.stream),
                           "ncclAllReduce (sum of the weighed outputs)");
        !s)
      return Status::error(what + ": " + s.message());
    return launch(ctx, finish, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args, what + " (finish)");
  }
};

Status treeCombineStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, std::unique_ptr<Step> &out) {
  const std::string family = attrStr(op.attrs, "gpu_kernel", "");
  auto st = std::make_unique<TreeCombineStep>();
  if (!mod.function(family + "_weigh", st->weigh) || !mod.function(family + "_finish", st->finish))
    return Status::error("has no tree-attention combine kernels (a plan from an older genc: recompile it)");
  st->heads = attrInt(op.attrs, "num_heads", 0);
  st->headDim = attrInt(op.attrs, "head_dim", 0);
  st->base.out = vm.ptr(op.results.at(0));
  st->base.shards = 1;
  out = std::move(st);
  return Status::ok();
}

Status attentionStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod,
                     std::unique_ptr<Step> &out) {
  const AttrMap &at = op.attrs;
  std::string family = attrStr(at, "gpu_kernel", "");
  if (family.empty())
    return Status::error("has no GPU kernel (the plan was compiled without NVRTC or by an older genc)");
  auto st = std::make_unique<AttentionStep>();
  if (Status s = mod.function(family + "_prologue", st->prologue); !s)
    return s;
  if (Status s = mod.function(family + "_attend", st->attend); !s)
    return s;
  if (Status s = mod.function(family + "_append", st->append); !s)
    return s;
  const Plan &plan = *vm.ctx.plan;
  const KvLayout &kv = *vm.ctx.layout;
  st->heads = attrInt(at, "num_heads", 0);
  st->kvHeads = attrInt(at, "num_kv_heads", st->heads);
  const int64_t D = attrInt(at, "head_dim", 0), perBlock = attrInt(at, "gpu_heads_per_block", 1);
  if (st->heads <= 0 || st->kvHeads <= 0 || D <= 0 || st->heads % st->kvHeads || perBlock <= 0 ||
      (st->heads / st->kvHeads) % perBlock)
    return Status::error("has malformed head attributes");
  st->gridY = st->kvHeads * (st->heads / st->kvHeads / perBlock);
  // The decode kernel where genc compiled one (its shape follows from the
  // op's, as genc derived it; a plan naming another is refused at load).
  const Device &dev = *vm.ctx.dev;
  const int64_t decodePerBlock = attrInt(at, "gpu_decode_heads_per_block", 0);
  const int mode = op.kind == "kv_attention" ? 0 : op.kind == "cross_attention" ? 1 : 2;
  const bool registers = attrInt(at, "gpu_decode_registers", 0) == 1;
  const bool i8 = mode == 1 && kv.crossI8; // one-byte tiles (genc --cross-kv-dtype i8)
  const int codes = !i8 ? 0 : kv.dtype == DType::F16 ? 1 : kv.dtype == DType::BF16 ? 2 : 0;
  DecodeShape shape = decodeShape(mode, st->heads / st->kvHeads, D,
                                  i8 ? 1 : static_cast<int>(dtypeSize(kv.dtype)), !i8 && kv.dtype == DType::BF16,
                                  kDecodeStageBudget, registers, codes);
  if (registers && !shape.registers)
    return Status::error("names a decode kernel streaming K/V into registers, which its head shape does not allow");
  // The stages genc compiled the kernel with (plans from before the
  // attribute: the default budget's).
  if (const int64_t stages = attrInt(at, "gpu_decode_stages", 0); stages && shape.heads && !shape.registers) {
    if (stages < 2 || stages > 4)
      return Status::error("names a decode kernel of " + std::to_string(stages) + " tile stages (2 to 4)");
    shape.sharedBytes = shape.sharedBytes / shape.stages * stages;
    shape.stages = static_cast<int>(stages);
  }
  if (decodePerBlock && decodePerBlock != shape.heads)
    return Status::error("names a decode kernel of " + std::to_string(decodePerBlock) +
                         " heads a block where its shape gives " + std::to_string(shape.heads));
  const int64_t decodeShared = shape.sharedBytes;
  // GENC_CUDA_DECODE=0: decode steps take the attend kernel too (A/B runs).
  const char *off = genrt::env::get("GENC_CUDA_DECODE");
  CUfunction fn = nullptr;
  if (!(off && std::string(off) == "0") && decodePerBlock > 0 && decodeShared <= dev.maxSharedPerBlock &&
      mod.function(family + "_decode", fn)) {
    if (Status s = allowShared(dev, fn, decodeShared); !s)
      return s;
    if (Status s = mod.function(family + "_merge", st->merge); !s)
      return s;
    st->decode = fn;
    st->decodeRows = attrInt(at, "gpu_decode_rows", 0) == 1;
    st->decodeGridY = st->kvHeads * (st->heads / st->kvHeads / decodePerBlock);
    st->decodeShared = static_cast<unsigned>(decodeShared);
    // Blocks an SM holds: its shared memory (1 KB a block reserved) and
    // registers (128 threads) allow.
    int regs = 0;
    dev.api->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    const int64_t bySmem = (228 * 1024) / (decodeShared + 2048), byRegs = 65536 / (std::max(regs, 32) * 128);
    st->decodePerSm = std::clamp<int64_t>(std::min(bySmem, byRegs), 1, 16);
    // The TMA kernel where genc compiled one, on sm_90 and newer
    // (GENC_CUDA_STREAM=0: never; 1: at every length; by default where a
    // sequence holds kStreamMinKeys keys or more, set below).
    const char *sOn = genrt::env::get("GENC_CUDA_STREAM");
    const long long sBytes = streamSharedBytes(decodePerBlock, D);
    if (attrInt(at, "gpu_decode_stream", 0) == 1 && !(sOn && std::string(sOn) == "0") && dev.major >= 9 &&
        st->decodeRows && sBytes <= dev.maxSharedPerBlock) {
      if (Status s = mod.function(family + "_stream", st->stream); !s)
        return s;
      if (Status s = allowShared(dev, st->stream, sBytes); !s)
        return s;
      st->streamShared = static_cast<unsigned>(sBytes);
      st->useStream = sOn && std::string(sOn) == "1";
    }
  }
  // The prefill kernel where genc compiled one (GENC_CUDA_PREFILL=0: runs of
  // many tokens on the attend kernel, A/B runs).
  const char *noPrefill = genrt::env::get("GENC_CUDA_PREFILL");
  if (attrInt(at, "gpu_prefill", 0) == 1 && !(noPrefill && std::string(noPrefill) == "0")) {
    if (!prefillEligible(D, static_cast<int>(dtypeSize(kv.dtype))))
      return Status::error("names a prefill kernel for a shape it does not take");
    const long long bytes = prefillSharedBytes(D);
    if (bytes <= dev.maxSharedPerBlock) {
      if (Status s = mod.function(family + "_prefill", st->prefill); !s)
        return s;
      if (Status s = allowShared(dev, st->prefill, bytes); !s)
        return s;
      st->prefillShared = static_cast<unsigned>(bytes);
    }
  }
  const bool cross = op.kind == "cross_attention", packed = op.kind == "packed_attention";
  st->cross = cross;
  st->headDim = D;
  const bool packedIo = at.count("qkv_offsets") != 0;
  GencAttnParams &p = st->base;
  p.shards = 1;
  size_t next = 0;
  p.x = vm.ptr(op.operands.at(next++));
  if (!packedIo && !cross) {
    p.k = vm.ptr(op.operands.at(next++));
    p.v = vm.ptr(op.operands.at(next++));
  }
  const Shape &xs = vm.prog.values[op.operands[0]].shape;
  p.width = xs.empty() || !xs.back().isConstant() ? 0 : xs.back().constant();
  if (!attrStr(at, "rope", "").empty()) {
    p.positions = vm.ptr(op.operands.at(next));
    int32_t cosV = op.operands.at(next + 1);
    p.cosTable = vm.ptr(cosV);
    p.sinTable = vm.ptr(op.operands.at(next + 2));
    if (!vm.isWeight(cosV))
      return Status::error("has RoPE tables that are not weights");
    p.positionsInTable = plan.weights[vm.prog.values[cosV].index].shape().at(0);
    next += 3;
  }
  if (at.count("qk_norm_epsilon")) {
    p.qNorm = vm.ptr(op.operands.at(next));
    p.kNorm = vm.ptr(op.operands.at(next + 1));
    next += 2;
  }
  if (attrInt(at, "bias_max_distance", 0) > 0)
    p.bias = vm.ptr(op.operands.back());
  p.out = vm.ptr(op.results.at(0));
  p.scale = static_cast<float>(attrFloat(at, "scale", 1.0 / std::sqrt(double(D))));
  const int64_t es = static_cast<int64_t>(dtypeSize(kv.dtype));
  int64_t layer = attrInt(at, "layer", -1);
  if (packed) {
    // @encode: keys from the run's own tokens only.
  } else if (cross) {
    if (layer < 0 || layer >= static_cast<int64_t>(kv.crossLayers.size()))
      return Status::error("names a cross-attention layer the plan does not have");
    p.cacheK = vm.ctx.cross + kv.crossLayerByteBase(layer);
    p.cacheV = p.cacheK + kv.crossHalfBytes(layer);
    p.capacity = kv.maxSourceLength;
  } else {
    if (layer < 0 || layer >= static_cast<int64_t>(kv.layers.size()))
      return Status::error("names a KV-cache layer the plan does not have");
    p.cacheK = vm.ctx.kv + kv.layerBase(layer) * es;
    p.cacheV = p.cacheK + kv.layerElements(layer) * es;
    p.capacity = kv.layers[layer].capacity;
    if (kv.sharesPrompts() && vm.ctx.pairs) {
      p.pairs = vm.ctx.pairs;
      p.pairStride = kv.maxLength;
      p.homes = kv.homes;
      p.branchCapacity = kv.layers[layer].branchCapacity;
    }
    st->selfAttention = true;
    st->rolling = kv.shards == 1 && p.capacity < kv.maxLength; // a shard's capacity is not a window
  }
  if (shape.keysPerTile > 0)
    st->decodeTiles = std::max<int64_t>(1, (p.capacity + shape.keysPerTile - 1) / shape.keysPerTile);
  if (st->stream) {
    // Its K and V maps: the layer's rows [rows][D] of 16-bit elements.
    const int64_t halfBytes = cross ? kv.crossHalfBytes(layer) : kv.layerElements(layer) * es;
    const int64_t rows = halfBytes / (D * 2);
    if (Status s = encodeRows(dev, p.cacheK, rows, D, p.kMap); !s)
      return s;
    if (Status s = encodeRows(dev, p.cacheV, rows, D, p.vMap); !s)
      return s;
    if (!st->useStream)
      st->useStream = p.capacity >= kStreamMinKeys;
  }
  out = std::move(st);
  return Status::ok();
}

// What the GPU runs of a program, by the op's class in the one table of op
// signatures: GEMMs, fused kernels, the attention kernels, views (copies)
// and host-side dims; any other kind runs only inside a fused body.
OpClass classOf(const std::string &k) {
  const OpSignature *sig = findOpSignature(k);
  return sig ? sig->cls : OpClass::Kernel;
}

bool isView(const std::string &k) { return classOf(k) == OpClass::View; }

} // namespace

Status compileProgram(const Program &prog, StepContext &ctx, const KernelModule &mod,
                      const std::vector<CUdeviceptr> &weights, CompiledProgram &out) {
  ValueMap vm{prog, ctx, weights};
  // A `dims` result is host data; the GPU can only skip it where nothing but
  // a view's shape operand reads it.
  std::set<int32_t> hostOnly;
  for (const OpInfo &op : prog.ops)
    if (classOf(op.kind) == OpClass::HostShape)
      hostOnly.insert(op.results.begin(), op.results.end());
  for (const OpInfo &op : prog.ops)
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (hostOnly.count(op.operands[i]) && !(isView(op.kind) && i > 0))
        return Status::error("plan op '" + op.kind + "' at \"" + op.loc +
                             "\" reads a shape computed on the host; the CUDA executor cannot run it");
  std::map<std::string, const KernelInfo *> kernelOf;
  for (const KernelInfo &k : ctx.plan->kernels)
    kernelOf[k.name] = &k;
  // The op of the last step and that step, where it is a fused one or a GEMM.
  const OpInfo *lastFusedOp = nullptr, *lastGemmOp = nullptr;
  FusedStep *lastFused = nullptr;
  GemmStep *lastGemm = nullptr;
  for (const OpInfo &op : prog.ops) {
    std::string where = "'" + op.kind + "' at \"" + op.loc + "\" in " + prog.name;
    std::unique_ptr<Step> step;
    const OpInfo *fusedBefore = lastFusedOp, *gemmBefore = lastGemmOp;
    FusedStep *fusedStepBefore = lastFused;
    GemmStep *gemmStepBefore = lastGemm;
    const OpClass cls = classOf(op.kind);
    // A view whose result shares its source's buffer (genc's plan-memory
    // gives it one): nothing to run, and the steps around it stay neighbours.
    const bool inPlaceView = cls == OpClass::View && !op.operands.empty() && op.results.size() == 1 &&
                             vm.ptr(op.operands[0]) == vm.ptr(op.results[0]) &&
                             vm.stored(op.operands[0]) == vm.stored(op.results[0]);
    if (cls != OpClass::HostShape && !inPlaceView)
      lastFusedOp = lastGemmOp = nullptr, lastFused = nullptr, lastGemm = nullptr;
    if (cls == OpClass::HostShape || inPlaceView) {
      continue;
    } else if (cls == OpClass::Gemm) {
      auto g = std::make_unique<GemmStep>();
      if (op.operands.size() < 2 || !vm.isWeight(op.operands[1]))
        return Status::error("plan op " + where + ": the CUDA executor runs a matmul only against a weight");
      const Tensor &w = ctx.plan->weights[prog.values[op.operands[1]].index];
      const ValueInfo &y = prog.values[op.results.at(0)];
      if (w.rank() != 2 || y.shape.empty() || !y.shape.back().isConstant())
        return Status::error("plan op " + where + ": a 2-D weight and a constant result width are needed");
      const bool planTransB = attrInt(op.attrs, "transpose_b", 0) != 0;
      const int32_t wi = prog.values[op.operands[1]].index;
      g->shape.K = planTransB ? w.shape()[1] : w.shape()[0];
      g->shape.N = y.shape.back().constant();
      g->shape.transB = planTransB || (wi < static_cast<int32_t>(ctx.weightTransposed.size()) && ctx.weightTransposed[wi]);
      if ((planTransB ? w.shape()[0] : w.shape()[1]) != g->shape.N)
        return Status::error("plan op " + where + ": the weight does not match the result's width");
      if (!parseEpilogue(attrStr(op.attrs, "epilogue", ""), g->shape.epilogue) ||
          g->shape.epilogue.bias != (op.operands.size() == 3))
        return Status::error("plan op " + where + ": a bad epilogue");
      g->shape.a = vm.stored(op.operands[0]);
      g->shape.b = w.dtype();
      g->shape.y = vm.stored(op.results[0]);
      g->shape.bias = g->shape.epilogue.bias ? vm.stored(op.operands[2]) : DType::F32;
      g->a = vm.ptr(op.operands[0]);
      g->b = vm.ptr(op.operands[1]);
      g->bias = g->shape.epilogue.bias ? vm.ptr(op.operands[2]) : 0;
      g->y = vm.ptr(op.results[0]);
      g->aShape = prog.values[op.operands[0]].shape;
      auto maxM = [&]() {
        int64_t n = elementsAt(g->aShape, prog.maxSymbols);
        return n > 0 ? n / std::max<int64_t>(1, g->shape.K) : 1;
      };
      if (Status s = ctx.gemm->prepare(g->shape, maxM(), g->a, g->b, g->bias, g->y); !s)
        return Status::error("plan op " + where + ": " + s.message());
      if (ctx.gemv)
        if (Status s = prepareGemv(op, mod, *g); !s)
          return Status::error("plan op " + where + ": " + s.message());
      if (ctx.gemv && fusedBefore)
        if (Status s = prepareAfter(vm, op, *fusedBefore, *fusedStepBefore, mod, *ctx.dev, *g); !s)
          return Status::error("plan op " + where + ": " + s.message());
      g->kind = "gemm";
      lastGemmOp = &op;
      lastGemm = g.get();
      step = std::move(g);
    } else if (cls == OpClass::Fused) {
      auto f = std::make_unique<FusedStep>();
      std::string body = attrStr(op.attrs, "body", "");
      auto it = kernelOf.find(body);
      if (it == kernelOf.end())
        return Status::error("plan op " + where + ": fused body '" + body + "' has no GPU kernel");
      if (Status s = f->kernel.prepare(*ctx.dev, mod, *it->second); !s)
        return s;
      for (int32_t v : op.operands)
        f->pointers.push_back(vm.ptr(v));
      for (int32_t v : op.results) {
        f->pointers.push_back(vm.ptr(v));
        f->results.push_back(prog.values[v].shape);
      }
      f->kind = "fused";
      lastFusedOp = &op;
      lastFused = f.get();
      if (ctx.gemv && gemmBefore)
        if (Status s = prepareThen(vm, *gemmBefore, op, *f, mod, *gemmStepBefore); !s)
          return Status::error("plan op " + where + ": " + s.message());
      step = std::move(f);
    } else if (cls == OpClass::CacheAttention) {
      if (Status s = attentionStep(op, vm, mod, step); !s)
        return Status::error("plan op " + where + " " + s.message());
      step->kind = "attention";
      if (ctx.tree.nccl && op.kind == "kv_attention") { // its combine with the other GPUs' shards
        step->what = where;
        out.steps.push_back(std::move(step));
        if (Status s = treeCombineStep(op, vm, mod, step); !s)
          return Status::error("plan op " + where + " " + s.message());
        step->kind = "combine";
      }
    } else if (cls == OpClass::View) {
      auto c = std::make_unique<CopyStep>();
      c->src = vm.ptr(op.operands.at(0));
      c->dst = vm.ptr(op.results.at(0));
      c->shape = prog.values[op.results[0]].shape;
      c->elementBytes = static_cast<int64_t>(dtypeSize(vm.stored(op.results[0])));
      if (vm.stored(op.operands[0]) != vm.stored(op.results[0]))
        return Status::error("plan op " + where + ": a view that changes the storage dtype");
      c->kind = "copy";
      step = std::move(c);
    } else {
      return Status::error("plan op " + where + " has no CUDA implementation in this genrun");
    }
    step->what = where;
    out.steps.push_back(std::move(step));
  }
  // The merge after a decode kernel starts while the decode kernel's latency
  // chain leaves HBM idle: it prefetches the next two GEMVs' weights (O,
  // then the gate-up's gate and up halves) into L2.
  for (size_t i = 0; i < out.steps.size(); ++i) {
    auto *at = dynamic_cast<AttentionStep *>(out.steps[i].get());
    if (!at)
      continue;
    GemmStep *next[2] = {};
    for (size_t j = i + 1, found = 0; j < out.steps.size() && found < 2; ++j)
      if (auto *g = dynamic_cast<GemmStep *>(out.steps[j].get()))
        next[found++] = g;
    for (int k = 0; k < 2 && next[k]; ++k) {
      const GemmStep &g = *next[k];
      const int64_t rowBytes = g.shape.K * static_cast<int64_t>(dtypeSize(g.shape.b)), all = g.shape.N * rowBytes;
      if (g.b % 16 || rowBytes % 16) // cp.async.bulk takes 16-byte aligned ranges
        break;
      if (k == 0) {
        at->pf[0] = {g.b, all};
      } else if (g.then) { // the GLU reads gate row n with up row N/2 + n
        at->pf[1] = {g.b, all / 2};
        at->pf[2] = {g.b + static_cast<CUdeviceptr>(all / 2), all / 2};
      } else {
        at->pf[1] = {g.b, all};
      }
    }
  }
  for (int32_t o : prog.outputs) {
    out.outputs.push_back(vm.ptr(o));
    out.outputStored.push_back(vm.stored(o));
  }
  return Status::ok();
}

namespace {
// GENC_CUDA_SKIP names a kind ("attention") or a kind in one program
// ("prefill:attention": a decode-only microbenchmark skips the prefill).
bool skipped(const StepContext &ctx, const ProgramRun &run, const std::string &kind) {
  if (ctx.skipKinds.empty())
    return false;
  static const char *const kPrograms[] = {"encode:", "prefill:", "decode:"};
  return ctx.skipKinds.count(kind) || ctx.skipKinds.count(kPrograms[static_cast<int>(run.kind)] + kind);
}
} // namespace

Status runSteps(const CompiledProgram &cp, StepContext &ctx, const ProgramRun &run) {
  if (!ctx.profile) {
    for (const auto &s : cp.steps)
      if (!skipped(ctx, run, s->kind))
        if (Status st = s->run(ctx, run); !st)
          return st;
    return Status::ok();
  }
  const DriverApi &a = *ctx.dev->api;
  std::vector<CUevent> ev(cp.steps.size() + 1);
  for (CUevent &e : ev)
    a.cuEventCreate(&e, CU_EVENT_DEFAULT);
  a.cuEventRecord(ev[0], ctx.stream);
  for (size_t i = 0; i < cp.steps.size(); ++i) {
    if (Status st = cp.steps[i]->run(ctx, run); !st)
      return st;
    a.cuEventRecord(ev[i + 1], ctx.stream);
  }
  a.cuEventSynchronize(ev.back());
  const char *prog = run.kind == ProgramKind::Decode ? "decode " : run.kind == ProgramKind::Prefill ? "prefill " : "encode ";
  for (size_t i = 0; i < cp.steps.size(); ++i) {
    float ms = 0;
    a.cuEventElapsedTime(&ms, ev[i], ev[i + 1]);
    auto &slot = ctx.profileMs[prog + cp.steps[i]->profileKind(ctx, run)];
    slot.first += ms;
    slot.second += 1;
  }
  for (CUevent &e : ev)
    a.cuEventDestroy(e);
  return Status::ok();
}

Status copyCacheSlots(StepContext &ctx, const KvCopier &k, const std::vector<int32_t> &dst,
                      const std::vector<int32_t> &src, const std::vector<int64_t> &lengths,
                      const std::vector<int64_t> &from) {
  const KvLayout &kv = *ctx.layout;
  const DriverApi &a = *ctx.dev->api;
  const int64_t es = static_cast<int64_t>(dtypeSize(kv.dtype));
  // Per layer: [sources, each with the widest rows any pair takes] then the
  // pairs; all layers' records staged and copied over at once.
  struct Layer {
    size_t at = 0, sources = 0, pairs = 0;
    bool kernel = false;
  };
  std::vector<Layer> layers(kv.layers.size());
  // The staged records of an earlier reorder may still be in flight.
  if (Status s = ctx.dev->check(a.cuStreamSynchronize(ctx.stream), "reordering the KV cache"); !s)
    return s;
  GencKvCopy *rec = static_cast<GencKvCopy *>(k.staging);
  size_t n = 0;
  for (size_t l = 0; l < kv.layers.size(); ++l) {
    const KvCacheLayer &L = kv.layers[l];
    const int64_t rowBytes = L.headDim * es;
    Layer &ly = layers[l];
    ly.kernel = k.fn && rowBytes % 16 == 0 && (ctx.kv + kv.layerBase(l) * es) % 16 == 0 && k.scratch % 16 == 0 &&
                static_cast<int64_t>(n + 2 * dst.size()) <= k.maxRecords;
    ly.at = n;
    std::map<int32_t, GencKvCopy> sources;
    std::vector<GencKvCopy> pairs;
    for (size_t i = 0; i < dst.size(); ++i) {
      const int64_t len = lengths[src[i]];
      const int64_t lo = len > L.capacity ? 0 : std::min(from[i], len), hi = std::min(len, L.capacity);
      pairs.push_back(GencKvCopy{dst[i], src[i], lo, hi});
      auto [it, fresh] = sources.emplace(src[i], GencKvCopy{src[i], src[i], lo, hi});
      if (!fresh)
        it->second.from = std::min<long long>(it->second.from, lo);
    }
    for (const auto &[s, c] : sources)
      rec[n++] = c;
    ly.sources = sources.size();
    for (const GencKvCopy &c : pairs)
      rec[n++] = c;
    ly.pairs = pairs.size();
    if (!ly.kernel)
      n = ly.at; // this layer by memcpy: its records are not needed
  }
  if (n > 0)
    if (Status s = ctx.dev->check(a.cuMemcpyHtoDAsync(k.records, rec, n * sizeof(GencKvCopy), ctx.stream),
                                  "reordering the KV cache");
        !s)
      return s;
  std::vector<GencKvCopy> memcpyRecords;
  for (size_t l = 0; l < kv.layers.size(); ++l) {
    const KvCacheLayer &L = kv.layers[l];
    const int64_t rowBytes = L.headDim * es, headBytes = L.capacity * rowBytes, slotBytes = L.kvHeads * headBytes;
    const int64_t halfBytes = kv.layerElements(l) * es;
    const CUdeviceptr base = ctx.kv + kv.layerBase(l) * es;
    const Layer &ly = layers[l];
    if (ly.kernel) {
      for (int phase = 0; phase < 2; ++phase) {
        GencKvCopyParams p{phase ? k.scratch : base, phase ? base : k.scratch,
                           k.records + (ly.at + (phase ? ly.sources : 0)) * sizeof(GencKvCopy), halfBytes, slotBytes,
                           headBytes, rowBytes};
        void *args[] = {&p};
        const size_t count = phase ? ly.pairs : ly.sources;
        if (count == 0)
          continue;
        if (Status s = ctx.dev->launch(k.fn, static_cast<unsigned>(count), static_cast<unsigned>(L.kvHeads), 2, 256,
                                       1, 0, ctx.stream, args, "genc_kv_copy (beam reordering)");
            !s)
          return s;
      }
      continue;
    }
    // Rows [c.from, c.to) of every head, K and V, from `in` to `out`.
    auto copy = [&](CUdeviceptr in, CUdeviceptr out, const GencKvCopy &c) {
      for (int half = 0; half < 2; ++half) {
        CUDA_MEMCPY2D m{};
        m.srcMemoryType = m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        m.srcDevice = in + half * halfBytes + c.src * slotBytes + c.from * rowBytes;
        m.dstDevice = out + half * halfBytes + c.dst * slotBytes + c.from * rowBytes;
        m.srcPitch = m.dstPitch = static_cast<size_t>(headBytes);
        m.WidthInBytes = static_cast<size_t>(std::max<int64_t>(c.to - c.from, 0) * rowBytes);
        m.Height = static_cast<size_t>(L.kvHeads);
        if (m.WidthInBytes == 0)
          continue;
        if (Status s = ctx.dev->check(a.cuMemcpy2DAsync(&m, ctx.stream), "reordering the KV cache"); !s)
          return s;
      }
      return Status::ok();
    };
    std::map<int32_t, GencKvCopy> sources;
    for (size_t i = 0; i < dst.size(); ++i) {
      const int64_t len = lengths[src[i]];
      const int64_t lo = len > L.capacity ? 0 : std::min(from[i], len), hi = std::min(len, L.capacity);
      auto [it, fresh] = sources.emplace(src[i], GencKvCopy{src[i], src[i], lo, hi});
      if (!fresh)
        it->second.from = std::min<long long>(it->second.from, lo);
    }
    for (const auto &[s, c] : sources)
      if (Status st = copy(base, k.scratch, c); !st)
        return st;
    for (size_t i = 0; i < dst.size(); ++i) {
      const int64_t len = lengths[src[i]];
      const int64_t lo = len > L.capacity ? 0 : std::min(from[i], len), hi = std::min(len, L.capacity);
      if (Status st = copy(k.scratch, base, GencKvCopy{dst[i], src[i], lo, hi}); !st)
        return st;
    }
  }
  // No sync: the next run on this stream follows the copies, and its own
  // sync reports what failed; the next reorder waits for these first.
  return Status::ok();
}

} // namespace genrt::cuda
