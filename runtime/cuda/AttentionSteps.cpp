// The attention steps: an attention op's kernel family (AttentionAbi.h) —
// prologue, attend and append for any run, the Flash-Decoding decode and
// merge kernels (or the TMA decode kernel) for decode steps, the
// tensor-core kernel for runs of many tokens — and, in a tree-attention
// group, the combine of the GPUs' outputs through NCCL after each
// self-attention op.
#include "runtime/cuda/StepKinds.h"

#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/NcclChannel.h"

#include <algorithm>
#include <cmath>

namespace genrt::cuda {
namespace {

Status launch(StepContext &ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, void **args,
              const std::string &what, unsigned shared = 0, unsigned threads = kAttnThreads) {
  if (gx == 0 || gy == 0 || gz == 0)
    return Status::ok();
  Status s = ctx.dev->launch(fn, gx, gy, gz, threads, 1, shared, ctx.stream, args, what);
  if (s && ctx.syncEachStep)
    s = ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
  return s;
}

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

// A run's attention workspace, shared by every attention op of a program:
// scratch, the log-sum-exps [rows] then the partials [rows, D], the merge
// tickets, the token places, cross lengths and prefill tiles.
void bindWorkspace(GencAttnParams &p, const StepContext &ctx) {
  p.scratch = ctx.scratch;
  p.lse = ctx.partial;
  p.partial = ctx.partial + static_cast<CUdeviceptr>(ctx.partialRows) * 4;
  p.tickets = ctx.tickets;
  p.places = ctx.places;
  p.crossLengths = ctx.crossLengths;
  p.tiles = ctx.tiles;
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
  /// The merge a warp a row (none in plans from an older genc): taken where
  /// S <= kMergeRowsSplits and the context's mergeRows (-1: T x heads > SMs).
  CUfunction mergeRows = nullptr;
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
  bool decodeRows = false; // the decode kernel computes its q, k, v rows (no prologue)
  unsigned decodeShared = 0;
  GencAttnParams base{};
  int64_t heads = 0, kvHeads = 0, headDim = 0, gridY = 0;
  bool cross = false;
  /// Self-attention whose cache rows a later token of a run may need: a
  /// rolling window shorter than the plan's length.
  bool selfAttention = false, rolling = false;
  /// The kernels' rows are token-major wherever they read or write them
  /// (q, k, v packed in x; the output merged over heads): the first n
  /// tokens of a run are then a run of n tokens of their own.
  bool tokenMajor = false;
  /// The most splits the partials workspace holds for T tokens, at most `cap`.
  int64_t fitSplits(const StepContext &ctx, int64_t T, int64_t cap) const {
    return std::max<int64_t>(1, std::min<int64_t>(cap, ctx.partialRows / std::max<int64_t>(1, T * heads)));
  }
  /// Whether the merge of n tokens' S splits goes a warp a row: the plan
  /// has the kernel, S within its splits, and GENC_CUDA_MERGE_ROWS (1) or,
  /// unset, more rows than SMs ask for it.
  bool mergesByRows(const StepContext &ctx, int64_t n, int64_t S) const {
    return mergeRows && S > 1 && S <= kMergeRowsSplits &&
           (ctx.mergeRows == 1 || (ctx.mergeRows == -1 && n * heads > ctx.dev->smCount));
  }
  /// The decode kernel (or the TMA one, `streams`) over tokens 0 .. n - 1 in
  /// S splits, then their merge: a warp a row where `byRows` allows and
  /// mergesByRows says so, else a block a token.
  Status decodeAndMerge(StepContext &ctx, void **args, int64_t n, int64_t S, bool streams, bool byRows,
                        const std::string &tag) const {
    const unsigned tx = static_cast<unsigned>(n);
    if (Status s = streams ? launch(ctx, stream, tx, static_cast<unsigned>(decodeGridY), static_cast<unsigned>(S),
                                    args, what + " (stream" + tag + ")", streamShared, kStreamThreads)
                           : launch(ctx, decode, tx, static_cast<unsigned>(decodeGridY), static_cast<unsigned>(S),
                                    args, what + " (decode" + tag + ")", decodeShared);
        !s || S == 1)
      return s;
    // The merge's L2 prefetch of the next GEMVs' weights (p.pf, p.pfBytes)
    // stays empty: with the 512-thread merge, 32 MiB of it made the 1.1B's
    // batch-1 step on an H200 1.014-1.026 ms against 0.992-0.995 without
    // (2026-11-29; docs/performance.md, "the merge's L2 prefetch off").
    if (byRows && mergesByRows(ctx, n, S)) {
      const int64_t rows = n * heads, perBlock = kMergeThreads / 32;
      return launch(ctx, mergeRows, static_cast<unsigned>((rows + perBlock - 1) / perBlock), 1, 1, args,
                    what + " (merge by rows" + tag + ")", 0, kMergeThreads);
    }
    return launch(ctx, merge, tx, static_cast<unsigned>(heads), 1, args, what + " (merge" + tag + ")", 0,
                  kMergeThreads);
  }
  /// Tokens 0 .. lone - 1 of a many-token run (p: the run's parameters, its
  /// k, v in the cache) on the decode kernel, then its splits' merge: a
  /// block a token, which walks only the tokens of its grid (p.tokens stays
  /// the run's: its rows' stride). Where the rows are token-major, those
  /// tokens are a run of `lone` tokens of their own and the merge goes by
  /// rows as a decode step's does, past the SMs' rows (GENC_CUDA_MERGE_ROWS
  /// as there): 64 of a server's decode rows were 2,048 blocks of the block
  /// merge a layer; by rows, the server's mixed steps took 2.789 ms against
  /// 3.043 (H100, 2026-12-07, docs/serving.md).
  Status loneTokens(StepContext &ctx, const GencAttnParams &run, int64_t lone) const {
    GencAttnParams p = run;
    p.append = 0; // the prologue appended them
    p.splits = decodeSplits(lone, ctx.dev->smCount, fitSplits(ctx, lone, 256), decodePerSm);
    // A run of their own only where the merge then goes by rows: the block
    // merge keeps the run's stride, as before.
    const bool byRows = tokenMajor && mergesByRows(ctx, lone, p.splits);
    if (byRows)
      p.tokens = lone;
    void *args[] = {&p};
    return decodeAndMerge(ctx, args, lone, p.splits, false, byRows, ", lone tokens");
  }
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
    const int64_t maxS = fitSplits(ctx, T, useDecode ? 256 : 64);
    int64_t S = 1;
    // (Not over a sharded cache: tree attention's runs were verified on the
    // decode kernel only.)
    const bool streams = useDecode && useStream && ctx.tree.shards <= 1;
    if (useDecode) {
      S = decodeSplits(T, ctx.dev->smCount, maxS, streams ? 1 : decodePerSm);
    } else { // enough blocks to fill the GPU twice over
      const int64_t blocks = std::max<int64_t>(1, T * gridY);
      S = std::clamp<int64_t>((2 * ctx.dev->smCount + blocks - 1) / blocks, 1, maxS);
    }
    p.splits = S;
    bindWorkspace(p, ctx);
    // The attend appends each token's k, v once its head's splits are done,
    // unless a token of a multi-token run could overwrite a rolling row that
    // another token of the run still reads: then a launch of its own, after.
    const bool appendLater = selfAttention && rolling && run.kind != ProgramKind::Decode;
    p.append = selfAttention && !appendLater;
    // The decode kernel reads every key from the cache: the prologue writes
    // the step's k, v there first.
    if ((useDecode || usePrefill) && selfAttention)
      p.append = 2;
    void *args[] = {&p};
    unsigned tx = static_cast<unsigned>(T);
    const int64_t rows = (cross ? heads : heads + 2 * kvHeads), rb = gencAttnPrologueRows(headDim);
    // A decode kernel from this genc norms and rotates its own rows.
    if (!(useDecode && decodeRows))
      if (Status s = launch(ctx, prologue, std::min(tx, 65535u), static_cast<unsigned>((rows + rb - 1) / rb), 1,
                            args, what + " (prologue)");
          !s)
        return s;
    if (useDecode)
      return decodeAndMerge(ctx, args, T, S, streams, true, "");
    if (usePrefill) {
      // A slot's lone token (a server's decode row beside prompt pieces)
      // through the prefill kernel is a tile of one row for each query head,
      // which reads its whole context for one row (H100, 2026-12-07: 0.115 ms
      // a layer of a 256-token mixed step, most of the step's extra cost).
      // The decode kernel takes those tokens as a decode step does; the
      // prologue has put their k, v in the cache.
      const int64_t lone = selfAttention && decode && ctx.prefillDecode ? ctx.loneTokens : 0;
      if (lone > 0)
        if (Status s = loneTokens(ctx, p, lone); !s)
          return s;
      if (lone == ctx.tileCount)
        return Status::ok();
      p.tiles = ctx.tiles + static_cast<CUdeviceptr>(lone) * 8;
      return launch(ctx, prefill, static_cast<unsigned>(ctx.tileCount - lone), static_cast<unsigned>(heads), 1, args,
                    what + " (prefill)", prefillShared);
    }
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
    const ncclComm_t comm = tr.channel ? tr.channel->comm() : nullptr;
    if (!comm)
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
                                         reinterpret_cast<void *>(tr.packed), part, kNcclFloat32, comm, ctx.stream),
                             "ncclAllGather (the GPUs' outputs and log-sum-exps)");
          !s)
        return Status::error(what + ": " + s.message());
      return launch(ctx, finish, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args, what + " (combine)");
    }
    if (Status s = n.check(n.allReduce(reinterpret_cast<void *>(tr.lse), reinterpret_cast<void *>(tr.lseMax),
                                       static_cast<size_t>(rows), kNcclFloat32, kNcclMax, comm, ctx.stream),
                           "ncclAllReduce (max of the log-sum-exps)");
        !s)
      return Status::error(what + ": " + s.message());
    if (Status s = launch(ctx, weigh, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args,
                          what + " (weigh)");
        !s)
      return s;
    if (Status s = n.check(n.allReduce(reinterpret_cast<void *>(tr.packed), reinterpret_cast<void *>(tr.packed),
                                       static_cast<size_t>(rows * (headDim + 1)), kNcclFloat32, kNcclSum, comm,
                                       ctx.stream),
                           "ncclAllReduce (sum of the weighed outputs)");
        !s)
      return Status::error(what + ": " + s.message());
    return launch(ctx, finish, static_cast<unsigned>(T), static_cast<unsigned>(heads), 1, args, what + " (finish)");
  }
};

} // namespace

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
  CUfunction fn = nullptr;
  if (vm.ctx.decodeKernel && decodePerBlock > 0 && decodeShared <= dev.maxSharedPerBlock &&
      mod.function(family + "_decode", fn)) {
    if (Status s = allowShared(dev, fn, decodeShared); !s)
      return s;
    if (Status s = mod.function(family + "_merge", st->merge); !s)
      return s;
    if (!mod.function(family + "_merge_rows", st->mergeRows))
      st->mergeRows = nullptr;
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
    const long long sBytes = streamSharedBytes(decodePerBlock, D);
    if (attrInt(at, "gpu_decode_stream", 0) == 1 && vm.ctx.streamKernel != 0 && dev.major >= 9 &&
        st->decodeRows && sBytes <= dev.maxSharedPerBlock) {
      if (Status s = mod.function(family + "_stream", st->stream); !s)
        return s;
      if (Status s = allowShared(dev, st->stream, sBytes); !s)
        return s;
      st->streamShared = static_cast<unsigned>(sBytes);
      st->useStream = vm.ctx.streamKernel == 1;
    }
  }
  // The prefill kernel where genc compiled one (GENC_CUDA_PREFILL=0: runs of
  // many tokens on the attend kernel, A/B runs).
  if (attrInt(at, "gpu_prefill", 0) == 1 && vm.ctx.prefillKernel) {
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
  st->tokenMajor = packedIo && attrInt(at, "merge_heads", 0) != 0;
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

bool attentionDecodeParams(const Step &step, const StepContext &ctx, int64_t T, int64_t maxSplits,
                           GencAttnParams &p, int64_t &splits) {
  if (step.kind != "attention")
    return false;
  const AttentionStep &a = static_cast<const AttentionStep &>(step);
  if (!a.decode || !a.decodeRows || !a.selfAttention || ctx.tree.nccl || ctx.tree.shards > 1)
    return false;
  p = a.base;
  p.tokens = T;
  p.shards = 1;
  p.shard = 0;
  p.lseOut = 0;
  const int64_t fit = a.fitSplits(ctx, T, 256);
  splits = a.decodeSplits(T, ctx.dev->smCount, maxSplits > 0 ? std::min(fit, maxSplits) : fit, a.decodePerSm);
  p.splits = splits;
  bindWorkspace(p, ctx);
  p.append = 2; // the decode routine writes the step's k, v before it reads the cache
  return true;
}

} // namespace genrt::cuda
