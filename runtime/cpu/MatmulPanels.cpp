#include "runtime/cpu/MatmulPanels.h"

// GCC 12's AVX-512 headers build results from _mm512_undefined_ps(), which
// -Wmaybe-uninitialized reports once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "runtime/cpu/ExpPoly.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>

namespace genrt::cpu {
namespace {

const bool kAvx512 = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));
const bool kAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

// Rows [0, MR) of a (row stride K) times one panel into y's columns
// [0, cols) (row stride N). 2·MR accumulators + 2 panel vectors: 26 of 32
// registers at MR 12; each k costs 2 loads, MR broadcasts, 2·MR FMAs.
template <int MR>
__attribute__((target("avx512f"))) void tile(const float *a, const float *panel, float *y, int64_t N, int64_t K,
                                             int64_t cols) {
  __m512 acc[MR][2];
#pragma GCC unroll 12 // every index constant: the accumulators stay in registers
  for (int m = 0; m < MR; ++m)
    acc[m][0] = acc[m][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 w0 = _mm512_loadu_ps(panel + k * kPanelWidth), w1 = _mm512_loadu_ps(panel + k * kPanelWidth + 16);
#pragma GCC unroll 12
    for (int m = 0; m < MR; ++m) {
      const __m512 av = _mm512_set1_ps(a[m * K + k]);
      acc[m][0] = _mm512_fmadd_ps(av, w0, acc[m][0]);
      acc[m][1] = _mm512_fmadd_ps(av, w1, acc[m][1]);
    }
  }
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xffff) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xffff) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
#pragma GCC unroll 12
  for (int m = 0; m < MR; ++m) {
    _mm512_mask_storeu_ps(y + m * N, m0, acc[m][0]);
    _mm512_mask_storeu_ps(y + m * N + 16, m1, acc[m][1]);
  }
}

using TileFn = void (*)(const float *, const float *, float *, int64_t, int64_t, int64_t);
constexpr int kMaxRows = 12;
constexpr TileFn kTiles[kMaxRows + 1] = {nullptr,  tile<1>, tile<2>, tile<3>,  tile<4>,  tile<5>, tile<6>,
                                         tile<7>,  tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

// AVX2's mask of a vector's first n lanes (n clamped to 0..8), for
// maskload / maskstore.
__attribute__((target("avx2"), always_inline)) inline __m256i firstLanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(n, 0, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The same sums on AVX2 + FMA: rows [0, MR) against half h of a panel
// (its columns [16h, 16h + 16), of which the first `cols` are y's). 2·MR
// accumulators + 2 panel vectors + a broadcast: 15 of 16 registers at MR 6.
template <int MR>
__attribute__((target("avx2,fma"))) void tileAvx2(const float *a, const float *panel, float *y, int64_t N,
                                                  int64_t K, int64_t cols) {
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m)
    acc[m][0] = acc[m][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 w0 = _mm256_loadu_ps(panel + k * kPanelWidth), w1 = _mm256_loadu_ps(panel + k * kPanelWidth + 8);
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const __m256 av = _mm256_broadcast_ss(a + m * K + k);
      acc[m][0] = _mm256_fmadd_ps(av, w0, acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(av, w1, acc[m][1]);
    }
  }
  const __m256i m0 = firstLanes(cols), m1 = firstLanes(cols - 8);
#pragma GCC unroll 6 // every index constant: the accumulators stay in registers
  for (int m = 0; m < MR; ++m) {
    _mm256_maskstore_ps(y + m * N, m0, acc[m][0]);
    _mm256_maskstore_ps(y + m * N + 8, m1, acc[m][1]);
  }
}
// One row against two whole panels (64 columns): 8 accumulators, as many
// chains as the FMA unit needs in flight (its latency times its
// throughput); a half-panel tile of one row keeps 2 and runs at a quarter
// of that. Each output is still one chain over k.
__attribute__((target("avx2,fma"))) void rowPairAvx2(const float *a, const float *p0, const float *p1, float *y,
                                                     int64_t K, int64_t cols) {
  __m256 acc[8];
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v)
    acc[v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 av = _mm256_broadcast_ss(a + k);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      acc[v] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p0 + k * kPanelWidth + 8 * v), acc[v]);
      acc[4 + v] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p1 + k * kPanelWidth + 8 * v), acc[4 + v]);
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v)
    _mm256_maskstore_ps(y + 8 * v, firstLanes(cols - 8 * v), acc[v]);
}

constexpr int kMaxRowsAvx2 = 6;
constexpr TileFn kTilesAvx2[kMaxRowsAvx2 + 1] = {nullptr,     tileAvx2<1>, tileAvx2<2>, tileAvx2<3>,
                                                 tileAvx2<4>, tileAvx2<5>, tileAvx2<6>};

// A panel's tiles for rows [0, M): one register tile of 12 rows and 32
// columns at a time with AVX-512, of 6 rows and 16 columns with AVX2.
void panelTiles(const float *a, const float *panel, float *y, int64_t M, int64_t N, int64_t K, int64_t cols) {
  if (kAvx512) {
    for (int64_t m0 = 0; m0 < M; m0 += kMaxRows)
      kTiles[std::min<int64_t>(kMaxRows, M - m0)](a + m0 * K, panel, y + m0 * N, N, K, cols);
    return;
  }
  for (int64_t h = 0; h * 16 < cols; ++h)
    for (int64_t m0 = 0; m0 < M; m0 += kMaxRowsAvx2)
      kTilesAvx2[std::min<int64_t>(kMaxRowsAvx2, M - m0)](a + m0 * K, panel + 16 * h, y + m0 * N + 16 * h, N, K,
                                                          cols - 16 * h);
}

// ExpPoly.h's expNonPositive, 16 lanes at once (2^k by scalef).
__attribute__((target("avx512f"))) __m512 expNonPositive16(__m512 t) {
  const __mmask16 under = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-87.f), _CMP_NGE_UQ);
  t = _mm512_max_ps(t, _mm512_set1_ps(-87.f));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(_mm512_sub_ps(t, _mm512_mul_ps(k, _mm512_set1_ps(0.693145751953125f))),
                                 _mm512_mul_ps(k, _mm512_set1_ps(1.42860682030941723212e-6f)));
  __m512 p = _mm512_set1_ps(1.f / 720.f);
  for (float c : {1.f / 120.f, 1.f / 24.f, 1.f / 6.f, 0.5f, 1.f, 1.f})
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
  return _mm512_mask_mov_ps(_mm512_setzero_ps(), static_cast<__mmask16>(~under), _mm512_scalef_ps(p, k));
}

__attribute__((target("avx512f"))) void softmaxCausal512(float *S, int64_t rows, int64_t n, int64_t offset,
                                                           float scale) {
  const __m512 sc = _mm512_set1_ps(scale);
  for (int64_t t = 0; t < rows; ++t) {
    float *row = S + t * n;
    const int64_t valid = offset + t + 1;
    auto mask = [&](int64_t j) {
      return valid - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (valid - j)) - 1);
    };
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < valid; j += 16)
      mx = _mm512_mask_max_ps(mx, mask(j), mx, _mm512_mul_ps(_mm512_mask_loadu_ps(_mm512_setzero_ps(), mask(j), row + j), sc));
    const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < valid; j += 16) {
      const __mmask16 k = mask(j);
      const __m512 e =
          _mm512_mask_mov_ps(_mm512_setzero_ps(), k, expNonPositive16(_mm512_sub_ps(_mm512_mul_ps(_mm512_mask_loadu_ps(_mm512_setzero_ps(), k, row + j), sc), m)));
      _mm512_mask_storeu_ps(row + j, k, e);
      sum = _mm512_add_ps(sum, e);
    }
    const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sum));
    for (int64_t j = 0; j < valid; j += 16)
      _mm512_mask_storeu_ps(row + j, mask(j), _mm512_mul_ps(_mm512_mask_loadu_ps(_mm512_setzero_ps(), mask(j), row + j), inv));
    std::fill(row + valid, row + n, 0.f);
  }
}


// The same softmax, a lane at a time (CPUs without AVX-512): ExpPoly.h's
// scalar exp, the row's sum in order.
void softmaxCausalPlain(float *S, int64_t rows, int64_t n, int64_t offset, float scale) {
  for (int64_t t = 0; t < rows; ++t) {
    float *row = S + t * n;
    const int64_t valid = offset + t + 1;
    float mx = -INFINITY;
    for (int64_t j = 0; j < valid; ++j)
      mx = std::max(mx, row[j] * scale);
    float sum = 0.f;
    for (int64_t j = 0; j < valid; ++j) {
      row[j] = expNonPositive(row[j] * scale - mx);
      sum += row[j];
    }
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < valid; ++j)
      row[j] *= inv;
    std::fill(row + valid, row + n, 0.f);
  }
}

} // namespace

bool havePanelKernels() { return kAvx512 || kAvx2; }

void softmaxCausalRows(float *S, int64_t rows, int64_t n, int64_t offset, float scale) {
  if (kAvx512)
    softmaxCausal512(S, rows, n, offset, scale);
  else
    softmaxCausalPlain(S, rows, n, offset, scale);
}

void packPanels(const float *w, int64_t K, int64_t N, float *out) {
  for (int64_t p = 0; p * kPanelWidth < N; ++p) {
    const int64_t n0 = p * kPanelWidth, cols = std::min(kPanelWidth, N - n0);
    float *dst = out + p * K * kPanelWidth;
    for (int64_t k = 0; k < K; ++k) {
      std::memcpy(dst + k * kPanelWidth, w + k * N + n0, static_cast<size_t>(cols) * sizeof(float));
      std::fill(dst + k * kPanelWidth + cols, dst + (k + 1) * kPanelWidth, 0.f);
    }
  }
}

void packPanelsTransposed(const float *wt, int64_t K, int64_t N, float *out) {
  for (int64_t p = 0; p * kPanelWidth < N; ++p) {
    const int64_t n0 = p * kPanelWidth, cols = std::min(kPanelWidth, N - n0);
    float *dst = out + p * K * kPanelWidth;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t c = 0; c < cols; ++c)
        dst[k * kPanelWidth + c] = wt[(n0 + c) * K + k];
      std::fill(dst + k * kPanelWidth + cols, dst + (k + 1) * kPanelWidth, 0.f);
    }
  }
}

bool matmulPanels(const float *a, const float *panels, float *y, int64_t M, int64_t N, int64_t K, ThreadPool *pool) {
  if (!havePanelKernels())
    return false;
  if (M == 0 || N == 0)
    return true;
  const int64_t P = (N + kPanelWidth - 1) / kPanelWidth;
  // A panel's tiles one after another: the panel (K x 128 bytes) stays in
  // L2 while every row of a goes by.
  auto run = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float *panel = panels + p * K * kPanelWidth;
      const int64_t n0 = p * kPanelWidth;
      if (!kAvx512 && M == 1 && p + 1 < p1) { // two panels at once
        rowPairAvx2(a, panel, panel + K * kPanelWidth, y + n0, K, std::min(2 * kPanelWidth, N - n0));
        ++p;
        continue;
      }
      panelTiles(a, panel, y + n0, M, N, K, std::min(kPanelWidth, N - n0));
    }
  };
  // Pieces of about 256k multiply-adds at least (a hand-off costs microseconds).
  const int64_t grain = std::max<int64_t>(1, (1 << 18) / std::max<int64_t>(1, M * K * kPanelWidth));
  if (pool && pool->size() > 1 && P > grain)
    pool->parallelFor(P, grain, run);
  else
    run(0, P);
  return true;
}

} // namespace genrt::cpu
