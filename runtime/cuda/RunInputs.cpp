// A run's host-side inputs (CudaExecutorImpl.h): its token ids, positions,
// logit rows, token places, prefill tiles and cross lengths (and, with
// shared prompts, the slots' pairs: KvCache.h) laid out in the pinned
// staging buffer, then copied to their fixed device buffers on the stream,
// where a decode step's graph finds them.
#include "runtime/cuda/CudaExecutorImpl.h"

#include "runtime/cuda/AttentionAbi.h"

#include <algorithm>
#include <cstring>

namespace genrt::cuda {

// The run's host-side inputs, laid out in the pinned staging buffer.
void CudaExecutor::stage(const ProgramRun &run) {
  uint8_t *s = static_cast<uint8_t *>(staging_);
  const int64_t T = static_cast<int64_t>(run.inputIds.size());
  staged_.ids = s;
  std::memcpy(s, run.inputIds.data(), T * 8);
  s += T * 8;
  staged_.positions = s;
  std::memcpy(s, run.positions.data(), T * 8);
  s += T * 8;
  staged_.rows = s;
  std::memcpy(s, run.logitRows.data(), run.logitRows.size() * 8);
  s += T * 8;
  staged_.places = s;
  GencTokenPlace *pl = reinterpret_cast<GencTokenPlace *>(s);
  // slot -> one past its last position in the run (reused: no allocation per step).
  if (run.kind != ProgramKind::Encode) {
    for (const TokenPlace &tp : run.attention.tokens)
      runEnd_.at(tp.slot) = 0;
    for (const TokenPlace &tp : run.attention.tokens)
      runEnd_[tp.slot] = std::max(runEnd_[tp.slot], tp.position + 1);
  }
  for (int64_t t = 0; t < T; ++t) {
    GencTokenPlace g{};
    if (run.kind == ProgramKind::Encode) {
      for (const SourceSegment &sg : run.attention.segments)
        if (t >= sg.start && t < sg.start + sg.len)
          g.segStart = sg.start, g.segLen = sg.len;
      g.position = t;
    } else {
      const TokenPlace &tp = run.attention.tokens[t];
      g.position = tp.position;
      g.cachedBefore = tp.cachedBefore;
      g.runEnd = runEnd_.at(tp.slot);
      g.slot = tp.slot;
      g.entry = run.attention.crossEntryOfToken.empty() ? 0 : run.attention.crossEntryOfToken[t];
      g.writeRegion = tp.write.region;
      g.writeIndex = tp.write.index;
    }
    pl[t] = g;
  }
  if (shared_ && run.kind != ProgramKind::Encode)
    pairs_.stage(run, kv_);
  s += T * sizeof(GencTokenPlace);
  // attn_N_prefill's tiles: up to 64 consecutive tokens of one slot (one
  // @encode segment) each.
  staged_.tiles = s;
  const bool encode = run.kind == ProgramKind::Encode;
  ctx_.tileCount = prefillTiles(
      T, [&](int64_t t) { return encode ? pl[t].segStart : static_cast<long long>(pl[t].slot); },
      reinterpret_cast<int32_t *>(s));
  ctx_.loneTokens = 0;
  // (A tile of one token that follows one of one token starts a slot; the
  // token is its slot's last in the run, so it attends to the cache alone.)
  if (!encode)
    for (const int32_t *tile = reinterpret_cast<const int32_t *>(s);
         ctx_.loneTokens < ctx_.tileCount && tile[2 * ctx_.loneTokens + 1] == 1 &&
         pl[ctx_.loneTokens].runEnd == pl[ctx_.loneTokens].position + 1;)
      ++ctx_.loneTokens;
  s += T * 8;
  staged_.crossLengths = s;
  std::memcpy(s, run.attention.crossLengths.data(), run.attention.crossLengths.size() * 8);
  staged_.crossCount = static_cast<int64_t>(run.attention.crossLengths.size());
  staged_.tokens = T;
  staged_.rowCount = static_cast<int64_t>(run.logitRows.size());
}

Status CudaExecutor::enqueueInputs(const ProgramRun &run) {
  const DriverApi &a = *dev_.api;
  const int64_t T = staged_.tokens;
  struct Copy {
    CUdeviceptr dst;
    const void *src;
    int64_t bytes;
  } copies[] = {
      {ctx_.arguments["input_ids"], staged_.ids, T * 8},
      {ctx_.arguments["positions"], staged_.positions, T * 8},
      {ctx_.arguments["logit_rows"], staged_.rows, staged_.rowCount * 8},
      {ctx_.places, staged_.places, T * static_cast<int64_t>(sizeof(GencTokenPlace))},
      {ctx_.tiles, staged_.tiles, ctx_.tileCount * 8},
      {ctx_.crossLengths, staged_.crossLengths, staged_.crossCount * 8},
      {ctx_.pairs + static_cast<CUdeviceptr>(pairs_.from) * 8,
       static_cast<const int32_t *>(pairs_.host) + pairs_.from * 2, pairs_.count * 8},
  };
  for (const Copy &c : copies)
    if (c.bytes > 0)
      if (Status s = dev_.check(a.cuMemcpyHtoDAsync(c.dst, c.src, c.bytes, stream_), "copying the run's inputs"); !s)
        return s;
  return Status::ok();
}

} // namespace genrt::cuda
