#include "compiler/ir/OpDefs.h"

#include <unordered_map>

namespace genc {

const std::vector<OpDef> &allOps() {
  using P = OpPattern;
  static const std::vector<OpDef> ops = {
      // Elementwise, numpy broadcasting.
      {"add", 2, 2, 1, 1, P::Elementwise},
      {"sub", 2, 2, 1, 1, P::Elementwise},
      {"mul", 2, 2, 1, 1, P::Elementwise},
      {"div", 2, 2, 1, 1, P::Elementwise},
      {"pow", 2, 2, 1, 1, P::Elementwise},
      {"max", 1, -1, 1, 1, P::Elementwise},
      {"min", 1, -1, 1, 1, P::Elementwise},
      {"equal", 2, 2, 1, 1, P::Elementwise},
      {"less", 2, 2, 1, 1, P::Elementwise},
      {"less_or_equal", 2, 2, 1, 1, P::Elementwise},
      {"greater", 2, 2, 1, 1, P::Elementwise},
      {"greater_or_equal", 2, 2, 1, 1, P::Elementwise},
      {"and", 2, 2, 1, 1, P::Elementwise},
      {"or", 2, 2, 1, 1, P::Elementwise},
      {"not", 1, 1, 1, 1, P::Elementwise},
      {"where", 3, 3, 1, 1, P::Elementwise},
      {"abs", 1, 1, 1, 1, P::Elementwise},
      {"neg", 1, 1, 1, 1, P::Elementwise},
      {"exp", 1, 1, 1, 1, P::Elementwise},
      {"log", 1, 1, 1, 1, P::Elementwise},
      {"sqrt", 1, 1, 1, 1, P::Elementwise},
      {"reciprocal", 1, 1, 1, 1, P::Elementwise},
      {"relu", 1, 1, 1, 1, P::Elementwise},
      {"sigmoid", 1, 1, 1, 1, P::Elementwise},
      {"tanh", 1, 1, 1, 1, P::Elementwise},
      {"erf", 1, 1, 1, 1, P::Elementwise},
      {"sin", 1, 1, 1, 1, P::Elementwise},
      {"cos", 1, 1, 1, 1, P::Elementwise},
      {"cast", 1, 1, 1, 1, P::Elementwise},       // {to = "f32"}
      {"identity", 1, 1, 1, 1, P::Elementwise},
      {"dropout", 1, 3, 1, 2, P::Elementwise},    // inference: identity (+ all-true mask)
      {"gelu", 1, 1, 1, 1, P::Elementwise},       // {approximate = "none"|"tanh"}
      {"silu", 1, 1, 1, 1, P::Elementwise},
      // Injective: data movement.
      {"reshape", 2, 2, 1, 1, P::Injective},      // (x, shape) {allowzero}
      {"flatten", 1, 1, 1, 1, P::Injective},      // {axis}
      {"squeeze", 1, 1, 1, 1, P::Injective},      // {axes}
      {"unsqueeze", 1, 1, 1, 1, P::Injective},    // {axes}
      {"transpose", 1, 1, 1, 1, P::Injective},    // {perm}
      {"expand", 2, 2, 1, 1, P::Injective},       // (x, shape)
      {"tile", 2, 2, 1, 1, P::Injective},         // (x, repeats): ONNX Tile
      {"concat", 1, -1, 1, 1, P::Injective},      // {axis}
      {"split", 1, 1, 1, -1, P::Injective},       // {axis, split}
      {"slice", 3, 5, 1, 1, P::Injective},        // (x, starts, ends[, axes[, steps]])
      {"gather", 2, 2, 1, 1, P::Injective},       // {axis}
      {"gather_elements", 2, 2, 1, 1, P::Injective}, // (data, indices) {axis}: ONNX GatherElements
      {"gather_nd", 2, 2, 1, 1, P::Injective},    // {batch_dims}
      {"trilu", 1, 2, 1, 1, P::Injective},        // (x[, k]) {upper}
      // Reductions and normalisations.
      {"reduce_mean", 1, 1, 1, 1, P::Reduction},  // {axes, keepdims}
      {"softmax", 1, 1, 1, 1, P::Reduction},      // {axis}
      {"layer_norm", 2, 3, 1, 1, P::Reduction},   // (x, scale[, bias]) {axis, epsilon}
      {"rms_norm", 2, 2, 1, 1, P::Reduction},     // (x, scale) {axis, epsilon}
      {"cumsum", 1, 1, 1, 1, P::Reduction},       // {axis, exclusive, reverse}
      // Matrix products.
      {"matmul", 2, 3, 1, 1, P::Gemm}, // (a, b[, bias]) {epilogue}: passes/FuseGemms.cpp
      {"gemm", 2, 3, 1, 1, P::Gemm},              // {alpha, beta, trans_a, trans_b}
      // Raised attention (passes/RaiseAttention.cpp; semantics in docs/ir-ops.md).
      {"attention", 3, 5, 1, 1, P::Attention},    // (q, k, v[, key_mask][, bias])
      // (q, k, v[, bias]), or after fold-attention-io
      // (x[, positions, cos, sin][, q_norm, k_norm][, bias])
      {"kv_attention", 1, 7, 1, 1, P::Attention},     // {layer, ...}: reads/appends a KV cache
      {"packed_attention", 1, 7, 1, 1, P::Attention}, // within each packed source
      {"cross_attention", 1, 1, 1, 1, P::Attention},  // (q) {layer, ...}: reads a cross-attention cache
      // A group of the ops above run as one kernel (passes/Fuse.cpp): operands
      // and results are the body function's arguments and outputs.
      {"fused", 0, -1, 1, -1, P::Opaque},         // {body = "NAME", pattern}
      // Values from shapes.
      {"constant", 0, 0, 1, 1, P::Shape},         // {value = dense<...>}
      {"shape", 1, 1, 1, 1, P::Shape},            // {start, end}
      {"constant_of_shape", 1, 1, 1, 1, P::Shape},// (shape) {value}
      {"range", 3, 3, 1, 1, P::Shape},            // (start, limit, delta)
      {"dims", 0, 0, 1, 1, P::Shape},             // {value = shape<...>}: i64 of symbolic dims
  };
  return ops;
}

const OpDef *lookupOp(const std::string &kind) {
  static const std::unordered_map<std::string, const OpDef *> index = [] {
    std::unordered_map<std::string, const OpDef *> m;
    for (const auto &d : allOps())
      m[d.name] = &d;
    return m;
  }();
  auto it = index.find(kind);
  return it == index.end() ? nullptr : it->second;
}

} // namespace genc
