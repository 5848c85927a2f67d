// The CUDA executor's cache operations besides attention (KvCache.h):
// beam reordering, the shared prompts' pair mirror, the cross-cache stores.
#include "runtime/cuda/KvCache.h"

#include "runtime/kv/KvRows.h"
#include "runtime/cuda/TokenAbi.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace genrt::cuda {

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

Status copySlots(StepContext &ctx, const KvCopier &copier, bool sharedPrompts, const std::vector<int32_t> &dst,
                 const std::vector<int32_t> &src, const std::vector<int64_t> &lengths,
                 const std::vector<int64_t> &from) {
  if (sharedPrompts)
    return Status::error("copySlots: this executor's beams share their prompt and are reordered by index");
  if (!copier.scratch)
    return Status::error("this plan has one beam a sequence: no slot reordering");
  if (ctx.layout->shards == 1)
    return copyCacheSlots(ctx, copier, dst, src, lengths, from);
  // A shard moves its own rows of those positions.
  std::vector<int64_t> rows(lengths.size()), fromRows(from.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    rows[i] = KvLayout::shardRows(lengths[i], ctx.tree.shard, ctx.layout->shards);
  for (size_t i = 0; i < from.size(); ++i)
    fromRows[i] = KvLayout::shardRows(from[i], ctx.tree.shard, ctx.layout->shards);
  return copyCacheSlots(ctx, copier, dst, src, rows, fromRows);
}

// Shared prompts: each slot of the run gets the pairs of its cached
// positions (the KvRows the run carries) and of this run's new ones (their
// places' writes) in its row of the pinned mirror, which goes up whole.
// A slot's row is rewritten from the first pair the mirror may not hold
// (KvRows::unchangedSince): after a reorder, what it took of its parent;
// else only what it appended since. Slots outside the run keep stale rows,
// which this run does not read.
void PairMirror::stage(const ProgramRun &run, const KvLayout &kv) {
  int32_t *mirror = static_cast<int32_t *>(host);
  const int64_t stride = kv.maxLength;
  static_assert(sizeof(KvRef) == 8, "a pair is the kernels' int2");
  for (const TokenPlace &tp : run.attention.tokens) {
    int32_t *row = mirror + tp.slot * stride * 2;
    if (tp.position == tp.cachedBefore) { // the slot's first token of the run (one piece a slot)
      const KvRows &rows = *run.attention.rows;
      uint64_t &stamp = slotStamp[size_t(tp.slot)];
      int64_t &held = slotHeld[size_t(tp.slot)];
      held = std::min({held, rows.unchangedSince(tp.slot, stamp), tp.cachedBefore});
      std::memcpy(row + 2 * held, rows.of(tp.slot).data() + held, size_t(tp.cachedBefore - held) * 8);
      stamp = rows.stamp(tp.slot);
      held = tp.cachedBefore;
    }
    row[2 * tp.position] = tp.write.region;
    row[2 * tp.position + 1] = tp.write.index;
  }
  // All of it: a decode step's graph replays its copy as captured, so the
  // range may not depend on which slots the step holds.
  from = 0;
  count = kv.slots * stride;
}

// @encode's K and V of each cross layer ([1, KVH, S, D], head-major) into
// the cross cache entry ([entry, KVH, max_length, D]).
Status storeCross(const StepContext &ctx, CUfunction crossStoreI8, const CompiledProgram &cp,
                  const ProgramRun &run) {
  const Device &dev = *ctx.dev;
  const KvLayout &kv = ctx.plan->kv;
  const int64_t S = static_cast<int64_t>(run.inputIds.size()), es = static_cast<int64_t>(dtypeSize(kv.dtype));
  if (cp.outputs.size() != 2 * kv.crossLayers.size() || !segmentsFit(run.attention.segments, S, kv))
    return Status::error("encode: @encode's results do not match the cross-attention cache");
  for (size_t l = 0; l < kv.crossLayers.size(); ++l) {
    const CrossCacheLayer &L = kv.crossLayers[l];
    if (cp.outputStored.at(2 * l) != kv.dtype)
      return Status::error("encode: @encode stores the cross K/V as " + std::string(dtypeName(cp.outputStored[2 * l])) +
                           ", the cache holds " + dtypeName(kv.dtype));
    if (kv.crossI8) { // codes and a scale a row, made on the device
      const CUdeviceptr base = ctx.cross + kv.crossLayerByteBase(l);
      for (int i = 0; i < 2; ++i)
        for (const SourceSegment &sg : run.attention.segments) {
          GencCrossStoreParams q{};
          q.src = cp.outputs[2 * l + i];
          q.codes = base + kv.crossRowByte(l, i == 1, sg.entry, 0, 0);
          q.scales = base + kv.crossScaleByte(l, i == 1, sg.entry, 0, 0);
          q.srcTokens = S;
          q.segStart = sg.start;
          q.segLen = sg.len;
          q.capacity = kv.maxSourceLength;
          q.D = static_cast<int>(L.headDim);
          q.srcBytes = static_cast<int>(es);
          q.bf16 = kv.dtype == DType::BF16;
          void *args[] = {&q};
          if (Status s = dev.launch(crossStoreI8, static_cast<unsigned>(sg.len), static_cast<unsigned>(L.kvHeads), 1,
                                    32, 1, 0, ctx.stream, args, "genc_cross_store_i8");
              !s)
            return s;
        }
      continue;
    }
    // [1, KVH, S, D] -> each segment's rows into its entry: one 2-D copy
    // per segment, layer and half.
    for (int i = 0; i < 2; ++i)
      for (const SourceSegment &sg : run.attention.segments) {
        CUDA_MEMCPY2D c{};
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = cp.outputs[2 * l + i] + static_cast<CUdeviceptr>(sg.start * L.headDim * es);
        c.srcPitch = static_cast<size_t>(S * L.headDim * es);
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = ctx.cross + kv.crossLayerByteBase(l) + kv.crossRowByte(l, i == 1, sg.entry, 0, 0);
        c.dstPitch = static_cast<size_t>(kv.maxSourceLength * L.headDim * es);
        c.WidthInBytes = static_cast<size_t>(sg.len * L.headDim * es);
        c.Height = static_cast<size_t>(L.kvHeads);
        if (Status s = dev.check(dev.api->cuMemcpy2DAsync(&c, ctx.stream), "storing the encoded source"); !s)
          return s;
      }
  }
  return Status::ok();
}

} // namespace genrt::cuda
