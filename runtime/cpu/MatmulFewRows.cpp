#include "runtime/cpu/MatmulFewRows.h"

#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <immintrin.h>

namespace genrt::cpu {
namespace {

const bool kAvx512 = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));
const bool kAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

// Columns [n0, n1) in blocks of 64 (four vectors) with all M rows'
// accumulators in registers (M x 4 <= 32), w's rows streamed in order; the
// last < 64 columns in single vectors, then masked.
template <int M>
__attribute__((target("avx512f"))) void columns(const float *a, const float *w, float *y, int64_t N, int64_t K,
                                                int64_t n0, int64_t n1) {
  int64_t j = n0;
  for (; j + 64 <= n1; j += 64) {
    __m512 acc[M][4];
#pragma GCC unroll 8 // every index constant: the accumulators stay in registers
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v)
        acc[m][v] = _mm512_setzero_ps();
    const float *wk = w + j;
    for (int64_t k = 0; k < K; ++k, wk += N) {
      const __m512 w0 = _mm512_loadu_ps(wk), w1 = _mm512_loadu_ps(wk + 16), w2 = _mm512_loadu_ps(wk + 32),
                   w3 = _mm512_loadu_ps(wk + 48);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        const __m512 av = _mm512_set1_ps(a[m * K + k]);
        acc[m][0] = _mm512_fmadd_ps(av, w0, acc[m][0]);
        acc[m][1] = _mm512_fmadd_ps(av, w1, acc[m][1]);
        acc[m][2] = _mm512_fmadd_ps(av, w2, acc[m][2]);
        acc[m][3] = _mm512_fmadd_ps(av, w3, acc[m][3]);
      }
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v)
        _mm512_storeu_ps(y + m * N + j + 16 * v, acc[m][v]);
  }
  for (; j < n1; j += 16) {
    const __mmask16 mask = j + 16 <= n1 ? __mmask16(0xffff) : __mmask16((1u << (n1 - j)) - 1);
    __m512 acc[M];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      acc[m] = _mm512_setzero_ps();
    const float *wk = w + j;
    for (int64_t k = 0; k < K; ++k, wk += N) {
      const __m512 wv = _mm512_maskz_loadu_ps(mask, wk);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m)
        acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(a[m * K + k]), wv, acc[m]);
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      _mm512_mask_storeu_ps(y + m * N + j, mask, acc[m]);
  }
}

// The same sums on AVX2 + FMA (16 registers of 8 lanes): blocks of 8·V
// columns, M·V accumulators, V weight vectors and a broadcast in registers;
// the last < 8 columns masked. Each output is the same chain of fused
// multiply-adds over k as the AVX-512 kernel's: the same bits.
template <int M>
__attribute__((target("avx2,fma"))) void columnsAvx2(const float *a, const float *w, float *y, int64_t N, int64_t K,
                                                     int64_t n0, int64_t n1) {
  constexpr int V = M == 1 ? 8 : M <= 2 ? 4 : M <= 4 ? 2 : 1; // one row: 8 chains in flight
  int64_t j = n0;
  for (; j + 8 * V <= n1; j += 8 * V) {
    __m256 acc[M][V];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        acc[m][v] = _mm256_setzero_ps();
    const float *wk = w + j;
    for (int64_t k = 0; k < K; ++k, wk += N) {
      __m256 wv[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        wv[v] = _mm256_loadu_ps(wk + 8 * v);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        const __m256 av = _mm256_broadcast_ss(a + m * K + k);
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v)
          acc[m][v] = _mm256_fmadd_ps(av, wv[v], acc[m][v]);
      }
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        _mm256_storeu_ps(y + m * N + j + 8 * v, acc[m][v]);
  }
  for (; j < n1; j += 8) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(8, n1 - j))), lanes);
    __m256 acc[M];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      acc[m] = _mm256_setzero_ps();
    const float *wk = w + j;
    for (int64_t k = 0; k < K; ++k, wk += N) {
      const __m256 wv = _mm256_maskload_ps(wk, mask);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m)
        acc[m] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * K + k), wv, acc[m]);
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      _mm256_maskstore_ps(y + m * N + j, mask, acc[m]);
  }
}

using ColumnsFn = void (*)(const float *, const float *, float *, int64_t, int64_t, int64_t, int64_t);
constexpr ColumnsFn kColumns[kFewRowsMax + 1] = {nullptr,    columns<1>, columns<2>, columns<3>, columns<4>,
                                                 columns<5>, columns<6>, columns<7>, columns<8>};
constexpr ColumnsFn kColumnsAvx2[kFewRowsMax + 1] = {
    nullptr,           columnsAvx2<1>, columnsAvx2<2>, columnsAvx2<3>, columnsAvx2<4>,
    columnsAvx2<5>,    columnsAvx2<6>, columnsAvx2<7>, columnsAvx2<8>};

} // namespace

bool matmulFewRows(const float *a, const float *w, float *y, int64_t M, int64_t N, int64_t K, ThreadPool *pool) {
  if (!(kAvx512 || kAvx2) || M < 1 || M > kFewRowsMax || N < 16)
    return false;
  const ColumnsFn fn = kAvx512 ? kColumns[M] : kColumnsAvx2[M];
  const int64_t blocks = (N + 63) / 64; // pieces of whole 64-column blocks
  auto piece = [&](int64_t b0, int64_t b1) { fn(a, w, y, N, K, b0 * 64, std::min(N, b1 * 64)); };
  if (pool && pool->size() > 1)
    pool->parallelFor(blocks, 1, piece);
  else
    piece(0, blocks);
  return true;
}

} // namespace genrt::cpu
