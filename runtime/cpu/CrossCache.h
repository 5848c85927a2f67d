// Encoder-decoder executors on the CPU: the cross-attention cache and the
// two attention ops that do not append to a self-attention KV cache.
//
// The cross cache holds, per cross-attention layer, the K and V of each
// encoded source: [max_batch entries, max_length positions, kv_heads,
// head_dim] f32. An entry belongs to one batch item; every beam (slot) of the
// item reads it through the slot's entry index, so beams never copy it
// (FastSeq) and its size does not depend on max_beams.
#pragma once
#include "runtime/Program.h"
#include "runtime/cpu/KvCache.h"

#include <vector>

namespace genrt::cpu {

class CrossCache {
public:
  explicit CrossCache(const Plan &plan);

  int64_t entries() const { return entries_; }
  int64_t capacity() const { return capacity_; }
  /// Stores one source's K and V for every layer: kv[2l], kv[2l+1] are
  /// [1, kv_heads, T, head_dim]; the source is tokens [start, start+len).
  Status store(int64_t entry, const std::vector<Tensor> &kv, int64_t start, int64_t len);
  int64_t length(int64_t entry) const { return lengths_[entry]; }

  // cross_attention: q[1, H, T, D] -> outs[0][1, H, T, D] (preallocated);
  // token t reads entry entryOfToken[t].
  Status attend(const AttrMap &attrs, const std::vector<Tensor> &ins, std::vector<Tensor> &outs,
                const std::vector<int64_t> &entryOfToken);

private:
  struct Layer {
    int64_t kvHeads, headDim;
    std::vector<float> k, v; // [entries, capacity, kvHeads, headDim]
  };
  int64_t entries_, capacity_;
  std::vector<Layer> layers_;
  std::vector<int64_t> lengths_;
};

/// One packed source sequence of an @encode call: tokens [start, start+len).
struct Segment {
  int64_t start, len;
};

/// packed_attention: q[1, H, T, D] k, v[1, KVH, T, D] [, bias] -> outs[0]
/// (preallocated). Each token attends every token of its own segment
/// (bidirectional), plus the relative bias when the op has one.
Status packedAttention(const AttrMap &attrs, const std::vector<Tensor> &ins,
                       std::vector<Tensor> &outs, const std::vector<Segment> &segments);

} // namespace genrt::cpu
