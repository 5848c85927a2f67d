// Matrix products against bf16 weights on the CPU (plans compiled with
// --dtype bf16): the weights stay bf16 in memory, so a decode step streams
// half the bytes of an f32 plan; the math is f32, as on the GPU.
//
//   y[M, N] = a[M, K] · w     w: bf16 [K, N], or [N, K] when transB
//
// Up to 8 rows (decode): matrix-vector loops that widen each weight as it is
// read, over pieces of N on the thread pool (pieces fixed by N and the pool,
// so results do not depend on scheduling). More rows (prefill): w widened a
// panel of columns at a time, each panel through OpenBLAS's sgemm.
#pragma once
#include <cstdint>

namespace genrt::cpu {

class ThreadPool;

/// `pool` may be null (everything on the calling thread).
void matmulBf16(const float *a, const uint16_t *w, float *y, int64_t M, int64_t N, int64_t K, bool transB,
                ThreadPool *pool);

inline float bf16ToFloat(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

} // namespace genrt::cpu
