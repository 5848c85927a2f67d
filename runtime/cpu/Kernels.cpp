#include "runtime/cpu/Kernels.h"

#include <cmath>
#include <vector>

namespace genrt::cpu {

void matmul(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K, bool transB) {
  for (int64_t m = 0; m < M; ++m) {
    float *crow = c + m * N;
    for (int64_t n = 0; n < N; ++n)
      crow[n] = 0.f;
    if (transB) {
      for (int64_t n = 0; n < N; ++n) {
        const float *brow = b + n * K;
        float acc = 0.f;
        for (int64_t k = 0; k < K; ++k)
          acc += a[m * K + k] * brow[k];
        crow[n] = acc;
      }
    } else {
      // i-k-j order: contiguous inner loop over b's rows.
      for (int64_t k = 0; k < K; ++k) {
        float av = a[m * K + k];
        const float *brow = b + k * N;
        for (int64_t n = 0; n < N; ++n)
          crow[n] += av * brow[n];
      }
    }
  }
}

void softmaxRows(float *x, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = x + r * n;
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
      mx = std::fmax(mx, row[i]);
    if (mx == -INFINITY) { // fully masked row: ONNX gives NaN; keep uniform zeros-safe
      for (int64_t i = 0; i < n; ++i)
        row[i] = std::nanf("");
      continue;
    }
    float sum = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      row[i] = std::exp(row[i] - mx);
      sum += row[i];
    }
    for (int64_t i = 0; i < n; ++i)
      row[i] /= sum;
  }
}

void layerNormRows(const float *x, const float *scale, const float *bias, float *y, int64_t rows,
                   int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    double mean = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += xr[i];
    mean /= n;
    double var = 0;
    for (int64_t i = 0; i < n; ++i)
      var += (xr[i] - mean) * (xr[i] - mean);
    var /= n;
    float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (int64_t i = 0; i < n; ++i)
      yr[i] = static_cast<float>(xr[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.f);
  }
}

} // namespace genrt::cpu
