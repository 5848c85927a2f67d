// The plan verifier's rules for the cache-backed attention ops
// (kv_attention, cross_attention, packed_attention; docs/ir-ops.md): heads
// and head_dim against the cache layout, the operand list the attributes
// imply (packed projection, RoPE tables, q/k norms, relative bias), and the
// shapes. The CUDA executor reads widths, table sizes and cache strides from
// these without rechecking them, so every one is settled here.
#include "runtime/plan/PlanLimits.h"
#include "runtime/plan/VerifyOp.h"

#include <cmath>

namespace genrt::verify {
namespace {

struct Heads {
  int64_t H = 0, KVH = 0, D = 0;
};

std::string headsRule(const OpSite &s, Heads &h) {
  const AttrMap &a = s.op.attrs;
  int64_t perBlock;
  if (!intAttrIn(a, "num_heads", 0, 1, kMaxHeads, h.H) || !intAttrIn(a, "num_kv_heads", h.H, 1, h.H, h.KVH) ||
      !intAttrIn(a, "head_dim", 0, 1, kMaxHeadDim, h.D) || h.H % h.KVH)
    return "num_heads, num_kv_heads and head_dim must be positive (at most " + std::to_string(kMaxHeads) + ", " +
           std::to_string(kMaxHeadDim) + "), with num_heads a multiple of num_kv_heads";
  if (!intAttrIn(a, "gpu_heads_per_block", 1, 1, h.H, perBlock) || (h.H / h.KVH) % perBlock)
    return "gpu_heads_per_block must divide num_heads / num_kv_heads";
  if (!intAttrIn(a, "gpu_decode_heads_per_block", 0, 0, 8, perBlock) || (perBlock && (h.H / h.KVH) % perBlock))
    return "gpu_decode_heads_per_block must be 0 to 8 and divide num_heads / num_kv_heads";
  int64_t rows;
  if (!intAttrIn(a, "gpu_decode_rows", 0, 0, perBlock ? 1 : 0, rows))
    return "gpu_decode_rows must be 0 or 1, and 0 without a decode kernel";
  int64_t stages;
  if (!intAttrIn(a, "gpu_decode_stages", 0, perBlock ? 2 : 0, perBlock ? 4 : 0, stages) && a.count("gpu_decode_stages"))
    return "gpu_decode_stages must be 2 to 4 with a decode kernel, absent without";
  int64_t registers;
  if (!intAttrIn(a, "gpu_decode_registers", 0, 0, perBlock ? 1 : 0, registers))
    return "gpu_decode_registers must be 0 or 1, and 0 without a decode kernel";
  int64_t stream;
  if (!intAttrIn(a, "gpu_decode_stream", 0, 0, perBlock ? 1 : 0, stream))
    return "gpu_decode_stream must be 0 or 1, and 0 without a decode kernel";
  double scale = attrFloat(a, "scale", 1.0);
  if (!std::isfinite(scale))
    return "its scale must be finite";
  int64_t merge;
  if (!intAttrIn(a, "merge_heads", 0, 0, 1, merge))
    return "merge_heads must be 0 or 1";
  return "";
}

// The cache the op reads: its layer's heads and head_dim are the op's.
std::string layoutRule(const OpSite &s, const Heads &h) {
  const KvLayout &kv = s.plan.kv;
  const int64_t layer = attrInt(s.op.attrs, "layer", -1); // in range: the loader checked it
  if (s.op.kind == "kv_attention") {
    const KvCacheLayer &L = kv.layers[layer];
    int64_t window;
    if (!intAttrIn(s.op.attrs, "window", 0, 0, kMaxLength, window) || window != L.window)
      return "its window differs from KV-cache layer " + std::to_string(layer) + "'s";
    if (L.kvHeads != h.KVH || L.headDim != h.D)
      return "its heads do not match KV-cache layer " + std::to_string(layer);
  } else if (s.op.kind == "cross_attention") {
    const CrossCacheLayer &L = kv.crossLayers[layer];
    if (L.kvHeads != h.KVH || L.headDim != h.D)
      return "its heads do not match cross-attention cache layer " + std::to_string(layer);
  }
  return "";
}

// Operands after the heads: positions, cos, sin (RoPE); q_norm, k_norm;
// the relative bias. `next` is the first of them.
std::string extrasRule(const OpSite &s, const Heads &h, const Dim &T, size_t next) {
  const AttrMap &a = s.op.attrs;
  const bool packedIo = a.count("qkv_offsets") != 0;
  const std::string rope = attrStr(a, "rope", "");
  if (!rope.empty()) {
    int64_t R;
    if (!packedIo || (rope != "half" && rope != "interleaved"))
      return "rope must be \"half\" or \"interleaved\", over a packed projection";
    if (!intAttrIn(a, "rotary_dim", 0, 2, h.D, R) || R % 2)
      return "rotary_dim must be even, in [2, head_dim]";
    if (s.numIn() < next + 3)
      return "rope needs positions, cos and sin operands";
    const ValueInfo &pos = s.in(next), &cos = s.in(next + 1), &sin = s.in(next + 2);
    if (pos.dtype != DType::I64 || pos.shape != Shape{Dim(1), T})
      return "its positions must be i64 [1, " + T.str() + "]";
    // Every position a sequence reaches must have its row in the tables.
    const bool source = s.prog.name == "encode"; // @encode's positions run to the source's length
    if (cos.storage != Storage::Weight || sin.storage != Storage::Weight || !isFloat(cos.dtype) ||
        !isFloat(sin.dtype) || cos.shape.size() != 2 || cos.shape != sin.shape || cos.shape[1] != Dim(R) ||
        !cos.shape[0].isConstant() ||
        cos.shape[0].constant() < (source ? s.plan.model.maxSourceLength : s.plan.model.maxLength))
      return std::string("its cos and sin tables must be float weights [") +
             (source ? "max_source_length" : "max_length") + " or more, rotary_dim]";
    next += 3;
  }
  if (a.count("qk_norm_epsilon")) {
    double eps = attrFloat(a, "qk_norm_epsilon", -1);
    if (!packedIo || s.op.kind == "cross_attention" || !std::isfinite(eps) || eps < 0)
      return "qk_norm_epsilon must be finite and >= 0, over a packed q/k projection";
    if (s.numIn() < next + 2)
      return "qk_norm_epsilon needs q_norm and k_norm operands";
    for (int i = 0; i < 2; ++i) {
      const ValueInfo &w = s.in(next + i);
      int64_t n = (i == 0 ? h.H : h.KVH) * h.D;
      if (!isFloat(w.dtype) || (w.shape != Shape{Dim(h.D)} && w.shape != Shape{Dim(n)}))
        return "its q/k norm weights must be float [head_dim] or [heads * head_dim]";
    }
    next += 2;
  }
  int64_t M;
  if (!intAttrIn(a, "bias_max_distance", 0, 0, kMaxLength, M))
    return "bias_max_distance must be in [0, " + std::to_string(kMaxLength) + "]";
  if (M > 0) {
    if (s.op.kind == "cross_attention" || s.numIn() != next + 1)
      return "bias_max_distance needs one relative bias operand, last";
    const ValueInfo &b = s.in(next);
    if (!isFloat(b.dtype) || b.shape != Shape{Dim(h.H), Dim(2 * M - 1)})
      return "its relative bias must be float [num_heads, 2 * bias_max_distance - 1]";
    ++next;
  }
  if (s.numIn() != next)
    return "it has " + std::to_string(s.numIn()) + " operands, its attributes call for " + std::to_string(next);
  return "";
}

} // namespace

std::string checkAttentionRules(const OpSite &s) {
  Heads h;
  if (std::string bad = headsRule(s, h); !bad.empty())
    return bad;
  if (std::string bad = layoutRule(s, h); !bad.empty())
    return bad;
  // Token axes are the run's packed tokens: what the Session passes as T.
  const Dim T = Dim::symbol(s.prog.name == "encode" ? "src_tokens" : "tokens");
  const bool cross = s.op.kind == "cross_attention";
  const size_t headOperands = cross ? 1 : 3;
  const Dim one(1);
  size_t next;
  if (s.op.attrs.count("qkv_offsets")) {
    std::vector<int64_t> offsets = attrInts(s.op.attrs, "qkv_offsets");
    const ValueInfo &x = s.in(0);
    std::optional<int64_t> W = constantLast(x.shape);
    if (!W || (x.shape != Shape{one, T, Dim(*W)} && x.shape != Shape{T, Dim(*W)}))
      return "its packed projection must be [1, " + T.str() + ", W] or [" + T.str() + ", W]";
    if (offsets.size() != headOperands)
      return "qkv_offsets must list " + std::to_string(headOperands) + " offsets";
    for (size_t i = 0; i < headOperands; ++i) {
      int64_t width = (i == 0 ? h.H : h.KVH) * h.D; // both at most 2^24: no overflow
      if (offsets[i] < 0 || offsets[i] > *W - width)
        return "qkv_offsets reach past the projection's width " + std::to_string(*W);
    }
    next = 1;
  } else {
    if (s.numIn() < headOperands)
      return "it needs " + std::to_string(headOperands) + " head-major operands";
    for (size_t i = 0; i < headOperands; ++i)
      if (s.in(i).shape != Shape{one, Dim(i == 0 ? h.H : h.KVH), T, Dim(h.D)})
        return "operand " + std::to_string(i) + " must be [1, heads, " + T.str() + ", head_dim]";
    if (attrStr(s.op.attrs, "rope", "") != "" || s.op.attrs.count("qk_norm_epsilon"))
      return "rope and q/k norms need the packed projection (qkv_offsets)";
    next = headOperands;
  }
  if (std::string bad = extrasRule(s, h, T, next); !bad.empty())
    return bad;
  const Shape &r = s.out(0).shape;
  const Dim HD(h.H * h.D);
  bool merged = attrInt(s.op.attrs, "merge_heads", 0) != 0;
  if (merged ? r != Shape{one, T, HD} && r != Shape{T, HD} : r != Shape{one, Dim(h.H), T, Dim(h.D)})
    return "its result " + shapeStr(r) + " is not " +
           (merged ? "[1, " + T.str() + ", heads * head_dim]" : "[1, heads, " + T.str() + ", head_dim]");
  return "";
}

} // namespace genrt::verify
