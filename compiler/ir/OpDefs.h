// The registry of op kinds: arity (from the runtime's table of op
// signatures, runtime/plan/OpSignatures.h) and the traits passes rely on.
//
// Every op the IR may hold is declared here with its pattern. The verifier checks arity
// against it; fusion reads the traits (TVM-style op patterns).
#pragma once
#include <string>
#include <vector>

namespace genc {

enum class OpPattern {
  Elementwise, // out[i] = f(in[i]) with numpy broadcasting of operands
  Injective,   // each output element reads one input element (reshape, transpose, gather)
  Reduction,   // reduces along axes (reduce_mean, softmax, layer_norm)
  Gemm,        // matrix products
  Attention,   // raised attention
  Shape,       // computes on shapes only
  Opaque,
};

struct OpDef {
  const char *name;
  int minOperands, maxOperands; // maxOperands = -1: variadic
  int minResults, maxResults;
  OpPattern pattern;
};

/// The definition of `kind`, or null if unknown.
const OpDef *lookupOp(const std::string &kind);
const std::vector<OpDef> &allOps();

} // namespace genc
