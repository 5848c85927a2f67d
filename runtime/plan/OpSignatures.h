// The one table of op kinds: for every op the IR and a plan may hold, its
// arity, the value domains (float, integer, bool) of its operands and
// results, and how an executor runs it. The plan verifier checks plans
// against it, the CPU and CUDA executors pick their implementation by its
// class, and the compiler's op registry (compiler/ir/OpDefs.cpp) takes the
// arity from it, so no second copy of these facts exists.
//
// Domains, one letter per operand (or result), the last letter repeating
// for variadic ops:
//   F float (f32, f16, bf16, f64)   I integer (i64, i32, i8, u8)   B bool
//   N float or integer              * anything
//   T the same domain as the op's other T's (any domain)
// A float value stored narrower (f16/bf16) is still a float: the kernels'
// math is f32 (runtime/cpu/OpLibrary.h), so domains, not dtypes, must agree.
#pragma once
#include "runtime/DType.h"

#include <string>
#include <string_view>
#include <vector>

namespace genrt {

/// How an executor runs an op kind.
enum class OpClass : uint8_t {
  Kernel,         // a kernel of the CPU op library; on the GPU only inside a fused body
  View,           // the same elements under a new shape (on the GPU: a copy)
  Gemm,           // matmul: cuBLASLt on the GPU
  NBitsGemm,      // matmul_nbits: 4/8-bit weights (runtime/plan/NBitsLayout.h)
  Fused,          // a fused group: its body on the CPU, its generated kernel on the GPU
  CacheAttention, // kv_attention, cross_attention, packed_attention: read the plan's caches
  HostShape,      // dims: integers from the run's symbols, computed on the host
};

struct OpSignature {
  const char *kind;
  int minOperands, maxOperands; // maxOperands -1: variadic
  int minResults, maxResults;   // maxResults -1: variadic
  const char *operands;         // domain letters (see above)
  const char *results;
  OpClass cls;
};

/// The signature of `kind`, or null for a kind no genc emits.
const OpSignature *findOpSignature(std::string_view kind);
const std::vector<OpSignature> &allOpSignatures();

/// Checks arity and domains of one op; "" when they fit, else the reason
/// ("has 3 operands, expected 2", "operand 1 is bool, expected float").
std::string checkOpSignature(const OpSignature &sig, const std::vector<DType> &operands,
                             const std::vector<DType> &results);

} // namespace genrt
