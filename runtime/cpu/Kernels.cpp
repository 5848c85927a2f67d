#include "runtime/cpu/Kernels.h"

#include "runtime/cpu/MatmulFewRows.h"
#include "runtime/cpu/MatmulPanels.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <vector>

#ifdef GENC_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace genrt::cpu {

// c[M,N] = a[M,K] · b[K,N], c zeroed here. Panels of b (KB x NB floats,
// 128 KiB) are reused by all M rows before moving on; the innermost loop runs
// over contiguous n and vectorises.
[[maybe_unused]] static void matmulNN(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K) {
  constexpr int64_t NB = 256, KB = 128;
  std::fill(c, c + M * N, 0.f);
  for (int64_t n0 = 0; n0 < N; n0 += NB) {
    int64_t n1 = std::min(N, n0 + NB);
    for (int64_t k0 = 0; k0 < K; k0 += KB) {
      int64_t k1 = std::min(K, k0 + KB);
      for (int64_t m = 0; m < M; ++m) {
        const float *arow = a + m * K;
        float *crow = c + m * N;
        for (int64_t k = k0; k < k1; ++k) {
          const float av = arow[k];
          const float *brow = b + k * N;
          for (int64_t n = n0; n < n1; ++n)
            crow[n] += av * brow[n];
        }
      }
    }
  }
}

#ifdef GENC_HAVE_OPENBLAS
// OpenBLAS: multithreaded, AVX-512 kernels picked at run time (DYNAMIC_ARCH).
// One row of a is a matrix-vector product, which streams b once at memory
// bandwidth (the decode step's case); b stored [N, K] (transB) is read as
// stored, never transposed into a copy.
static void blasMatmul(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K, bool transB,
                       int64_t ldb, int64_t ldc) {
  if (M == 1) {
    if (transB)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.f, b, ldb, a, 1, 0.f, c, 1);
    else
      cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.f, b, ldb, a, 1, 0.f, c, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, M, N, K, 1.f, a, K, b, ldb, 0.f, c,
              ldc);
}

void matmul(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K, bool transB,
            ThreadPool *pool) {
  if (M == 0 || N == 0)
    return;
  if (K == 0) {
    std::fill(c, c + M * N, 0.f);
    return;
  }
  const int64_t ldb = transB ? K : N;
  // With AVX-512 or AVX2 every b[K, N] product is a sum over k in order (the same
  // bits as a weight packed at load, runtime/cpu/MatmulPanels.h): a few rows
  // stream b as it is, more rows pack it into panels first.
  if (!transB && matmulFewRows(a, b, c, M, N, K, pool))
    return;
  if (!transB && havePanelKernels()) {
    std::vector<float> panels(static_cast<size_t>(panelFloats(K, N)));
    packPanels(b, K, N, panels.data());
    matmulPanels(a, panels.data(), c, M, N, K, pool);
    return;
  }
  // Blocks of 64 columns at least, and at least ~64k multiply-adds a block
  // (a hand-off costs microseconds).
  const int64_t cols = std::max<int64_t>(64, (65536 / std::max<int64_t>(1, M * K) + 63) / 64 * 64);
  if (!pool || pool->size() <= 1 || N < 2 * cols) {
    blasMatmul(a, b, c, M, N, K, transB, ldb, N);
    return;
  }
  const int64_t blocks = (N + 63) / 64;
  pool->parallelFor(blocks, cols / 64, [&](int64_t b0, int64_t b1) {
    const int64_t n0 = b0 * 64, n1 = std::min(N, b1 * 64);
    blasMatmul(a, transB ? b + n0 * K : b + n0, c + n0, M, n1 - n0, K, transB, ldb, N);
  });
}

void setMatmulThreads(int n) { openblas_set_num_threads(n); }
#else
void matmul(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K, bool transB,
            ThreadPool *) {
  if (!transB) {
    matmulNN(a, b, c, M, N, K);
    return;
  }
  // b[N,K] -> bt[K,N] once (O(NK)), so both layouts share one loop nest and
  // one summation order.
  std::vector<float> bt(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      bt[k * N + n] = b[n * K + k];
  matmulNN(a, bt.data(), c, M, N, K);
}

void setMatmulThreads(int) {}
#endif

// One softmax over n elements spaced `stride` apart.
static void softmaxStrided(float *x, int64_t n, int64_t stride) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    mx = std::fmax(mx, x[i * stride]);
  if (mx == -INFINITY) { // every logit masked out: 0/0, as ONNX and PyTorch give
    for (int64_t i = 0; i < n; ++i)
      x[i * stride] = NAN;
    return;
  }
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    float e = std::exp(x[i * stride] - mx);
    x[i * stride] = e;
    sum += e;
  }
  for (int64_t i = 0; i < n; ++i)
    x[i * stride] /= sum;
}

void softmax(float *x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j)
      softmaxStrided(x + o * n * inner + j, n, inner);
}

void layerNormRows(const float *x, const float *scale, const float *bias, float *y, int64_t rows,
                   int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float mean = 0.f;
    for (int64_t i = 0; i < n; ++i)
      mean += xr[i];
    mean /= static_cast<float>(n);
    float var = 0.f;
    for (int64_t i = 0; i < n; ++i)
      var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<float>(n);
    const float inv = 1.f / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i)
      yr[i] = (xr[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.f);
  }
}

void rmsNormRows(const float *x, const float *scale, float *y, int64_t rows, int64_t n,
                 float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float ss = 0.f;
    for (int64_t i = 0; i < n; ++i)
      ss += xr[i] * xr[i];
    const float inv = 1.f / std::sqrt(ss / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i)
      yr[i] = xr[i] * inv * scale[i];
  }
}

void meanAxis(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    float *yo = y + o * inner;
    std::fill(yo, yo + inner, 0.f);
    for (int64_t i = 0; i < n; ++i) {
      const float *xi = x + (o * n + i) * inner;
      for (int64_t j = 0; j < inner; ++j)
        yo[j] += xi[j];
    }
    for (int64_t j = 0; j < inner; ++j)
      yo[j] /= static_cast<float>(n);
  }
}

} // namespace genrt::cpu
