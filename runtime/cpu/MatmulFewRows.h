// y[M, N] = a[M, K] · w[K, N] for a decode step's few rows (1 <= M <= 8), w
// row-major f32: each weight is read once for all M rows, as a stream
// (BLAS's sgemm packs w first: three passes over memory where one is
// needed). Each column's sum runs over k in order with fused multiply-adds,
// whatever piece of columns a thread takes, so results do not depend on the
// thread count, or whether the CPU has AVX-512 or AVX2 + FMA (the same
// chain of fused multiply-adds in either's lanes: the same bits).
#pragma once
#include <cstdint>

namespace genrt::cpu {

class ThreadPool;

constexpr int64_t kFewRowsMax = 8;

/// False (nothing written) when this CPU has neither AVX-512 nor AVX2 + FMA,
/// or the shape is not one it serves; the caller then uses BLAS.
bool matmulFewRows(const float *a, const float *w, float *y, int64_t M, int64_t N, int64_t K, ThreadPool *pool);

} // namespace genrt::cpu
