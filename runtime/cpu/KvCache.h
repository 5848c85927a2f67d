// The CPU executor's caches: host memory laid out by the plan's KvLayout
// (runtime/kv/KvLayout.h), in its dtype, and the three attention ops that read
// them. Math is f32; rows stored as f16/bf16 are rounded when written, as on
// the GPU.
#pragma once
#include "runtime/Executor.h"
#include "runtime/kv/KvLayout.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/ThreadPool.h"

#include <cstdint>
#include <vector>

namespace genrt::cpu {

/// T5's relative position bias operand of an attention op: f32
/// [heads, 2M-1], entry [h, d + M - 1] added to the score of a key at
/// distance d = key position - query position (attribute bias_max_distance M).
struct RelativeBias {
  const float *table = nullptr;
  int64_t maxDistance = 0;
  float at(int64_t h, int64_t d) const { return table[h * (2 * maxDistance - 1) + d + maxDistance - 1]; }
  bool covers(int64_t d) const { return d > -maxDistance && d < maxDistance; }
  /// Reads the bias (operand `index`, when the attribute is set) and checks its shape.
  static Status from(const AttrMap &attrs, const std::vector<Tensor> &ins, size_t index,
                     int64_t heads, RelativeBias &out);
};

class HostKvCache {
public:
  /// Allocates every cache of `layout`; fails (no throw) when memory is short.
  static Status create(const KvLayout &layout, HostKvCache &out);

  const KvLayout &layout() const { return layout_; }

  /// Row (region, head, index) of self-attention layer l's K (v false) or
  /// V: (slot, head, position) without shared prompts (KvLayout::offset).
  void writeSelf(size_t l, bool v, KvRef at, int64_t head, const float *row);
  /// The row as f32: a pointer into the cache (f32 caches) or into `scratch`.
  const float *readSelf(size_t l, bool v, KvRef at, int64_t head, std::vector<float> &scratch) const;
  void writeCross(size_t l, bool v, int64_t entry, int64_t head, int64_t pos, const float *row);
  const float *readCross(size_t l, bool v, int64_t entry, int64_t head, int64_t pos,
                         std::vector<float> &scratch) const;

  /// Slot dst[i] takes slot src[i]'s first lengths[src[i]] positions, of
  /// which those below from[i] it holds already (Executor::copySlots).
  void copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                 const std::vector<int64_t> &lengths, const std::vector<int64_t> &from);

  /// `n` values in place as the cache would hold them (f16 / bf16 rounding;
  /// an f32 cache leaves them).
  void round(float *values, int64_t n) const;

private:
  uint8_t *at(std::vector<uint8_t> &buf, int64_t element) const {
    return buf.data() + element * static_cast<int64_t>(dtypeSize(layout_.dtype));
  }
  const uint8_t *at(const std::vector<uint8_t> &buf, int64_t element) const {
    return buf.data() + element * static_cast<int64_t>(dtypeSize(layout_.dtype));
  }
  void store(uint8_t *dst, const float *row, int64_t n) const;
  const float *load(const uint8_t *src, int64_t n, std::vector<float> &scratch) const;

  KvLayout layout_;
  std::vector<std::vector<uint8_t>> self_;  // per layer: K then V
  std::vector<std::vector<uint8_t>> cross_; // per cross layer: K, V (then their row scales: i8)
};

// The attention ops over head-major operands (cpu/AttentionIo.h converts the
// packed forms): q[1, H, T, D] (k, v [1, KVH, T, D]) -> out[1, H, T, D],
// preallocated.

/// kv_attention: token t attends causally (within `window`) to its slot's
/// cached positions and to this run's earlier tokens of the same slot, then
/// its k/v are appended to the cache.
Status selfAttention(HostKvCache &cache, const AttrMap &attrs, const std::vector<Tensor> &ins,
                     Tensor &out, const AttentionContext &ctx, ThreadPool *pool = nullptr);
/// cross_attention: token t reads its cross entry's encoded source.
Status crossAttention(const HostKvCache &cache, const AttrMap &attrs, const std::vector<Tensor> &ins,
                      Tensor &out, const AttentionContext &ctx, ThreadPool *pool = nullptr);
/// packed_attention (@encode): each token attends every token of its own
/// source segment, plus the relative bias when the op has one.
Status packedAttention(const AttrMap &attrs, const std::vector<Tensor> &ins, Tensor &out,
                       const AttentionContext &ctx);

} // namespace genrt::cpu
