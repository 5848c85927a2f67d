#include "runtime/cpu/MatmulBf16.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/VectorClones.h"

#include <algorithm>
#include <cmath>
#include <immintrin.h>
#include <vector>

namespace genrt::cpu {
namespace {

constexpr int64_t kMaxGemvRows = 8;

// The loops below are written for the vectoriser (independent lanes, no
// reassociation needed), built for each CPU level (VectorClones.h).

// w [N, K]: y[m, n] = dot(a[m, :], w[n, :]) for n in [n0, n1).
GENC_VECTOR_CLONES
void gemvRowsNK(const float *a, const uint16_t *w, float *y, int64_t M, int64_t N, int64_t K, int64_t n0,
                int64_t n1) {
  constexpr int L = 16; // partial sums per dot product, added in a fixed order
  for (int64_t n = n0; n < n1; ++n) {
    const uint16_t *wr = w + n * K;
    for (int64_t m = 0; m < M; ++m) {
      const float *ar = a + m * K;
      float acc[L] = {};
      int64_t k = 0;
      for (; k + L <= K; k += L)
        for (int j = 0; j < L; ++j)
          acc[j] += ar[k + j] * bf16ToFloat(wr[k + j]);
      float s = 0.f;
      for (int j = 0; j < L; ++j)
        s += acc[j];
      for (; k < K; ++k)
        s += ar[k] * bf16ToFloat(wr[k]);
      y[m * N + n] = s;
    }
  }
}

// w [K, N]: columns [n0, n1) of y, w's rows read in order (each piece
// streams its columns of every row; blocking the columns instead walks w
// with a stride and measured 4x slower on a 2048 x 5632 weight).
GENC_VECTOR_CLONES
void gemvColsKN(const float *a, const uint16_t *w, float *y, int64_t M, int64_t N, int64_t K, int64_t n0,
                int64_t n1, float *acc) {
  const int64_t nb = n1 - n0;
  float *row = acc + M * nb; // the row's piece, widened once for every m
  std::fill(acc, acc + M * nb, 0.f);
  for (int64_t k = 0; k < K; ++k) {
    const uint16_t *wr = w + k * N + n0;
    for (int64_t j = 0; j < nb; ++j)
      row[j] = bf16ToFloat(wr[j]);
    for (int64_t m = 0; m < M; ++m) {
      const float av = a[m * K + k];
      float *am = acc + m * nb;
      for (int64_t j = 0; j < nb; ++j)
        am[j] += av * row[j];
    }
  }
  for (int64_t m = 0; m < M; ++m)
    std::copy(acc + m * nb, acc + (m + 1) * nb, y + m * N + n0);
}

// The same two loops in AVX-512 (16 weights a vector, widened by a shift,
// fused multiply-adds, the scalar tails with std::fma so that every element
// rounds alike wherever a piece ends), picked when the CPU has it.
__attribute__((target("avx512f"))) void gemvRowsNK512(const float *a, const uint16_t *w, float *y, int64_t M,
                                                      int64_t N, int64_t K, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint16_t *wr = w + n * K;
    for (int64_t m = 0; m < M; ++m) {
      const float *ar = a + m * K;
      __m512 acc = _mm512_setzero_ps();
      int64_t k = 0;
      for (; k + 16 <= K; k += 16) {
        __m512i wi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(wr + k)));
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(ar + k), _mm512_castsi512_ps(_mm512_slli_epi32(wi, 16)), acc);
      }
      float s = _mm512_reduce_add_ps(acc);
      for (; k < K; ++k)
        s = std::fma(ar[k], bf16ToFloat(wr[k]), s);
      y[m * N + n] = s;
    }
  }
}

__attribute__((target("avx512f"))) void gemvColsKN512(const float *a, const uint16_t *w, float *y, int64_t M,
                                                      int64_t N, int64_t K, int64_t n0, int64_t n1, float *acc) {
  const int64_t nb = n1 - n0;
  std::fill(acc, acc + M * nb, 0.f);
  for (int64_t k = 0; k < K; ++k) {
    const uint16_t *wr = w + k * N + n0;
    int64_t j = 0;
    for (; j + 16 <= nb; j += 16) {
      __m512i wi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(wr + j)));
      const __m512 wv = _mm512_castsi512_ps(_mm512_slli_epi32(wi, 16));
      for (int64_t m = 0; m < M; ++m) {
        float *am = acc + m * nb + j;
        _mm512_storeu_ps(am, _mm512_fmadd_ps(_mm512_set1_ps(a[m * K + k]), wv, _mm512_loadu_ps(am)));
      }
    }
    for (; j < nb; ++j) {
      const float wf = bf16ToFloat(wr[j]);
      for (int64_t m = 0; m < M; ++m)
        acc[m * nb + j] = std::fma(a[m * K + k], wf, acc[m * nb + j]);
    }
  }
  for (int64_t m = 0; m < M; ++m)
    std::copy(acc + m * nb, acc + (m + 1) * nb, y + m * N + n0);
}

// __builtin_cpu_init first: this runs as a static initialiser.
const bool kAvx512 = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));

void forPieces(ThreadPool *pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (pool)
    pool->parallelFor(n, grain, fn);
  else
    fn(0, n);
}

} // namespace

void matmulBf16(const float *a, const uint16_t *w, float *y, int64_t M, int64_t N, int64_t K, bool transB,
                ThreadPool *pool) {
  if (M == 0 || N == 0)
    return;
  if (M <= kMaxGemvRows) {
    forPieces(pool, N, 64, [&](int64_t n0, int64_t n1) {
      if (transB) {
        (kAvx512 ? gemvRowsNK512 : gemvRowsNK)(a, w, y, M, N, K, n0, n1);
      } else {
        static thread_local std::vector<float> acc;
        acc.resize(static_cast<size_t>((M + 1) * (n1 - n0)));
        (kAvx512 ? gemvColsKN512 : gemvColsKN)(a, w, y, M, N, K, n0, n1, acc.data());
      }
    });
    return;
  }
  // Many rows: the product is compute-bound. w is widened a panel of columns
  // at a time into a buffer that stays in cache (a whole widened copy would
  // be written to memory and read back: +80% time to first token measured
  // on the 135M Llama), and each panel goes through sgemm.
  constexpr int64_t NB = 512;
  static thread_local std::vector<float> panel, out;
  panel.resize(static_cast<size_t>(NB * K));
  out.resize(static_cast<size_t>(M * NB));
  for (int64_t n0 = 0; n0 < N; n0 += NB) {
    const int64_t nb = std::min(NB, N - n0);
    float *pw = panel.data();
    forPieces(pool, transB ? nb : K, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) // transB: rows n0 + r of w [N, K]; else row r of w [K, N]
        if (transB)
          for (int64_t k = 0; k < K; ++k)
            pw[r * K + k] = bf16ToFloat(w[(n0 + r) * K + k]);
        else
          for (int64_t j = 0; j < nb; ++j)
            pw[r * nb + j] = bf16ToFloat(w[r * N + n0 + j]);
    });
    matmul(a, pw, out.data(), M, nb, K, transB);
    for (int64_t m = 0; m < M; ++m)
      std::copy(out.data() + m * nb, out.data() + (m + 1) * nb, y + m * N + n0);
  }
}

} // namespace genrt::cpu
