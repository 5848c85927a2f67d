// The CPU KV cache and the kv_attention op that reads and appends it.
//
// Per layer: k and v of [slots, capacity, kv_heads, head_dim] f32. capacity is
// the plan's max length, or `window` for sliding-window layers (a rolling
// buffer: position p lives at p % capacity).
#pragma once
#include "runtime/Program.h"
#include "runtime/cpu/OpLibrary.h"

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

/// Where a packed token belongs: its slot, its position, and the slot's
/// length before this forward (tokens at or after it come from the operands).
struct TokenInfo {
  int32_t slot;
  int64_t position;
  int64_t chunkStart;
};

class KvCache {
public:
  explicit KvCache(const Plan &plan);

  // q[1, H, T, D] k[1, KVH, T, D] v[1, KVH, T, D] -> outs[0][1, H, T, D] (preallocated)
  Status attend(KernelContext &ctx, const AttrMap &attrs, const std::vector<Tensor> &ins,
                std::vector<Tensor> &outs, const std::vector<TokenInfo> &tokens);

  /// Slot dst[i] takes slot src[i]'s contents (its first lengths[src[i]] positions).
  void reorder(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
               const std::vector<int64_t> &lengths);

private:
  struct Layer {
    int64_t capacity, kvHeads, headDim, window;
    std::vector<float> k, v;
    float *at(std::vector<float> &buf, int64_t slot, int64_t pos) {
      return buf.data() + ((slot * capacity + pos % capacity) * kvHeads) * headDim;
    }
  };
  std::vector<Layer> layers_;
};

} // namespace genrt::cpu
