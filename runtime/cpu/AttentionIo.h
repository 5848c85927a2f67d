// The layouts an attention op's operands and result may have (passes/
// FoldAttentionIo.cpp, docs/ir-ops.md): head-major q/k/v [1, heads, T, D], or
// the packed projection X[1, T, W] (or [T, W]) with `qkv_offsets` (and RoPE applied on
// the way in); a head-major result, or [1, T, heads·D] with `merge_heads`.
// The CPU attention kernels work head-major; these convert around them.
#pragma once
#include "runtime/Attr.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <vector>

namespace genrt::cpu {

struct AttentionIo {
  std::vector<Tensor> operands; // head-major q[, k, v], then the op's bias, if any
  bool mergeHeads = false;
  int64_t heads = 0, headDim = 0;
};

/// Head-major operands for an op reading `ins`; `headOperands` is 3 for
/// kv/packed attention (q, k, v), 1 for cross attention (q).
Status unpackAttention(const AttrMap &attrs, const std::vector<Tensor> &ins, size_t headOperands,
                       AttentionIo &io);

/// o[1, H, T, D] -> out[1, T, H·D] (out preallocated).
void mergeHeads(const Tensor &o, Tensor &out);

} // namespace genrt::cpu
