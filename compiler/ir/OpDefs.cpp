#include "compiler/ir/OpDefs.h"

#include "runtime/plan/OpSignatures.h"

#include <cassert>
#include <unordered_map>

namespace genc {

namespace {
struct KindPattern {
  const char *name;
  OpPattern pattern;
};
} // namespace

const std::vector<OpDef> &allOps() {
  using P = OpPattern;
  // Arity comes from the runtime's table of op signatures, which every
  // kind here must have: a plan can hold any of them.
  static const KindPattern patterns[] = {
      // Elementwise, numpy broadcasting.
      {"add", P::Elementwise},
      {"sub", P::Elementwise},
      {"mul", P::Elementwise},
      {"div", P::Elementwise},
      {"pow", P::Elementwise},
      {"max", P::Elementwise},
      {"min", P::Elementwise},
      {"equal", P::Elementwise},
      {"less", P::Elementwise},
      {"less_or_equal", P::Elementwise},
      {"greater", P::Elementwise},
      {"greater_or_equal", P::Elementwise},
      {"and", P::Elementwise},
      {"or", P::Elementwise},
      {"not", P::Elementwise},
      {"where", P::Elementwise},
      {"abs", P::Elementwise},
      {"neg", P::Elementwise},
      {"exp", P::Elementwise},
      {"log", P::Elementwise},
      {"sqrt", P::Elementwise},
      {"reciprocal", P::Elementwise},
      {"relu", P::Elementwise},
      {"sigmoid", P::Elementwise},
      {"tanh", P::Elementwise},
      {"erf", P::Elementwise},
      {"sin", P::Elementwise},
      {"cos", P::Elementwise},
      {"cast", P::Elementwise},       // {to = "f32"}
      {"identity", P::Elementwise},
      {"dropout", P::Elementwise},    // inference: identity (+ all-true mask)
      {"gelu", P::Elementwise},       // {approximate = "none"|"tanh"}
      {"silu", P::Elementwise},
      // Injective: data movement.
      {"reshape", P::Injective},      // (x, shape) {allowzero}
      {"flatten", P::Injective},      // {axis}
      {"squeeze", P::Injective},      // {axes}
      {"unsqueeze", P::Injective},    // {axes}
      {"transpose", P::Injective},    // {perm}
      {"expand", P::Injective},       // (x, shape)
      {"tile", P::Injective},         // (x, repeats): ONNX Tile
      {"concat", P::Injective},      // {axis}
      {"split", P::Injective},       // {axis, split}
      {"slice", P::Injective},        // (x, starts, ends[, axes[, steps]])
      {"gather", P::Injective},       // {axis}
      {"gather_elements", P::Injective}, // (data, indices) {axis}: ONNX GatherElements
      {"gather_nd", P::Injective},    // {batch_dims}
      {"trilu", P::Injective},        // (x[, k]) {upper}
      // Reductions and normalisations.
      {"reduce_mean", P::Reduction},  // {axes, keepdims}
      {"softmax", P::Reduction},      // {axis}
      {"layer_norm", P::Reduction},   // (x, scale[, bias]) {axis, epsilon}
      {"rms_norm", P::Reduction},     // (x, scale) {axis, epsilon}
      {"cumsum", P::Reduction},       // {axis, exclusive, reverse}
      // Matrix products.
      {"matmul", P::Gemm}, // (a, b[, bias]) {epilogue}: passes/FuseGemms.cpp
      {"gemm", P::Gemm},              // {alpha, beta, trans_a, trans_b}
      {"matmul_nbits", P::Gemm},      // (a, b, scales[, zero_points]) {bits, block_size, n}
      // Raised attention (passes/RaiseAttention.cpp; semantics in docs/ir-ops.md).
      {"attention", P::Attention},    // (q, k, v[, key_mask][, bias])
      // (q, k, v[, bias]), or after fold-attention-io
      // (x[, positions, cos, sin][, q_norm, k_norm][, bias])
      {"kv_attention", P::Attention},     // {layer, ...}: reads/appends a KV cache
      {"packed_attention", P::Attention}, // within each packed source
      {"cross_attention", P::Attention},  // (q) {layer, ...}: reads a cross-attention cache
      // A group of the ops above run as one kernel (passes/Fuse.cpp): operands
      // and results are the body function's arguments and outputs.
      {"fused", P::Opaque},         // {body = "NAME", pattern}
      // Values from shapes.
      {"constant", P::Shape},         // {value = dense<...>}
      {"shape", P::Shape},            // {start, end}
      {"constant_of_shape", P::Shape},// (shape) {value}
      {"range", P::Shape},            // (start, limit, delta)
      {"dims", P::Shape},             // {value = shape<...>}: i64 of symbolic dims
  };
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> r;
    for (const KindPattern &k : patterns) {
      const genrt::OpSignature *sig = genrt::findOpSignature(k.name);
      assert(sig && "an op kind without a runtime signature");
      r.push_back({k.name, sig->minOperands, sig->maxOperands, sig->minResults, sig->maxResults, k.pattern});
    }
    return r;
  }();
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
