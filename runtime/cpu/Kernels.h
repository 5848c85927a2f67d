// Reference CPU kernels in float32, shared by the compiler's interpreter and
// the CPU executor, so that both compute bit-identical results. Plain loops
// over row-major buffers, fp32 accumulation; each kernel states its shapes.
#pragma once
#include "runtime/cpu/ExpPoly.h"
#include "runtime/cpu/Activation.h"

#include <cmath>
#include <cstdint>

namespace genrt::cpu {

class ThreadPool;

// c[M,N] = a[M,K] · b[K,N]   (row-major; b given as b[N,K] when transB).
// OpenBLAS where the build has it (sgemv for one row, sgemm otherwise), so
// the executor and the interpreter still compute identical results; else
// loops blocked over N and K (a panel of b stays in cache). With a pool,
// blocks of columns go to its threads, each one single-threaded BLAS call
// (a column's sum is the same whichever block holds it).
void matmul(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K,
            bool transB = false, ThreadPool *pool = nullptr);
/// Threads of BLAS's own (1 where the executor's pool splits the work).
void setMatmulThreads(int n);

// x[outer, n, inner] -> softmax along n, in place (max-subtracted, fp32 sums).
// A row that is all -inf becomes NaN, as in ONNX and PyTorch.
void softmax(float *x, int64_t outer, int64_t n, int64_t inner);
// x[rows, n] -> softmax along n, in place.
inline void softmaxRows(float *x, int64_t rows, int64_t n) { softmax(x, rows, n, 1); }

// y[rows, n] = (x - mean) / sqrt(var + eps) * scale[n] + bias[n]  (bias may be null;
// biased variance, two passes)
void layerNormRows(const float *x, const float *scale, const float *bias, float *y, int64_t rows,
                   int64_t n, float eps);

// y[rows, n] = x * (1 / sqrt(mean(x²) + eps)) * scale[n]   (T5 / Llama RMSNorm)
void rmsNormRows(const float *x, const float *scale, float *y, int64_t rows, int64_t n, float eps);

// x[outer, n, inner] -> mean along n: y[outer, inner]
void meanAxis(const float *x, float *y, int64_t outer, int64_t n, int64_t inner);

// Scalar activations, written the way PyTorch's CPU kernels write them.
/// 1 / (1 + e^-x) from ExpPoly.h's exp of -|x| (never overflows; within
/// ~2e-7 of libm's): one definition for the scalar callers and the rows
/// (Activation.h), so both round alike.
inline __attribute__((always_inline)) float sigmoid(float x) {
  const float e = expNonPositive(-std::fabs(x)), r = 1.f / (1.f + e);
  return x != x ? x : x >= 0.f ? r : e * r;
}
inline __attribute__((always_inline)) float silu(float x) { return x * sigmoid(x); }
// gelu(x) = x/2 · (1 + erf(x/√2))
inline float geluErf(float x) { return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f)); }
// gelu(x) ≈ x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))
inline float geluTanh(float x) {
  geluTanhRow(&x, 1); // the epilogue's arithmetic, to the bit
  return x;
}

} // namespace genrt::cpu
