// The layouts an attention op's operands and result may have (passes/
// FoldAttentionIo.cpp, docs/ir-ops.md): head-major q/k/v [1, heads, T, D], or
// the packed projection X[1, T, W] (or [T, W]) with `qkv_offsets` (and RoPE applied on
// the way in); a head-major result, or [1, T, heads·D] with `merge_heads`.
// The CPU attention kernels work head-major; these convert around them.
#pragma once
#include "runtime/plan/Attr.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <vector>

namespace genrt::cpu {

class ThreadPool;

struct AttentionIo {
  std::vector<Tensor> operands; // head-major q[, k, v], then the op's bias, if any
  bool mergeHeads = false;
  int64_t heads = 0, headDim = 0;
};

/// How one operand's heads (q, k or v) are read from the packed projection.
struct HeadReading {
  int64_t offset = 0, heads = 0, headDim = 0; // head j at columns offset + j·headDim
  std::string rope;                           // "", "half" or "interleaved"
  int64_t rotaryDim = 0;                      // rotated dims (the tables' width)
  const Tensor *positions = nullptr, *cos = nullptr, *sin = nullptr;
  const Tensor *norm = nullptr; // RMSNorm weight: [headDim] per head, [heads·headDim] per row
  float eps = 0.f;
};

/// x[1, T, W] (or [T, W]) -> out[1, heads, T, headDim] (preallocated):
/// normalised, then rotated, as `h` says. Operands must already be checked
/// (unpackAttention does; fold-attention-io tests its readings with it).
/// Heads go over `pool` where given (each head its own rows: the same bits).
void unpackHeads(const Tensor &x, const HeadReading &h, Tensor &out, ThreadPool *pool = nullptr);

/// Head-major operands for an op reading `ins`; `headOperands` is 3 for
/// kv/packed attention (q, k, v), 1 for cross attention (q).
Status unpackAttention(const AttrMap &attrs, const std::vector<Tensor> &ins, size_t headOperands,
                       AttentionIo &io, ThreadPool *pool = nullptr);

/// o[1, H, T, D] -> out[1, T, H·D] (out preallocated).
void mergeHeads(const Tensor &o, Tensor &out);

} // namespace genrt::cpu
