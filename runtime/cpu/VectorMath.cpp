#include "runtime/cpu/VectorMath.h"

#include "runtime/cpu/ExpPoly.h"
#include "runtime/cpu/VectorClones.h"

#include <cmath>
#include <cstring>

namespace genrt::cpu {
namespace {

#define GENC_INLINE inline __attribute__((always_inline))

constexpr int L = 16; // partial sums per reduction

// The partial sums meet as a tree (halves added lane-wise), which the
// vectoriser keeps in registers; a sequential sum of 16 would be a chain of
// 15 dependent adds per key.
GENC_INLINE float reduce(float (&acc)[L]) {
  for (int w = L / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k)
      acc[k] += acc[k + w];
  return acc[0];
}

// y += w x: restrict on the parameters is what lets it vectorise.
GENC_INLINE void axpy(float w, const float *__restrict x, float *__restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += w * x[i];
}

// Four keys' dot products with q at once: independent chains hide the FMA
// latency.
GENC_INLINE void dot4(const float *__restrict q, const float *__restrict k0, const float *__restrict k1,
                      const float *__restrict k2, const float *__restrict k3, int64_t n, float *out) {
  float a0[L] = {}, a1[L] = {}, a2[L] = {}, a3[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int k = 0; k < L; ++k) {
      const float x = q[i + k];
      a0[k] += x * k0[i + k];
      a1[k] += x * k1[i + k];
      a2[k] += x * k2[i + k];
      a3[k] += x * k3[i + k];
    }
  float s0 = reduce(a0), s1 = reduce(a1), s2 = reduce(a2), s3 = reduce(a3);
  for (; i < n; ++i) {
    s0 += q[i] * k0[i];
    s1 += q[i] * k1[i];
    s2 += q[i] * k2[i];
    s3 += q[i] * k3[i];
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

} // namespace

GENC_VECTOR_CLONES
void attendRowF32(const float *q, const float *const *keys, const float *const *values, int64_t n, int64_t D,
                  float scale, const float *bias, float *__restrict p, float *__restrict o) {
  float mx = -INFINITY;
  int64_t j4 = 0;
  for (; j4 + 4 <= n; j4 += 4)
    dot4(q, keys[j4], keys[j4 + 1], keys[j4 + 2], keys[j4 + 3], D, p + j4);
  for (; j4 < n; ++j4) { // the last n % 4 keys, one at a time (same sums, same order)
    float four[4];
    dot4(q, keys[j4], keys[j4], keys[j4], keys[j4], D, four);
    p[j4] = four[0];
  }
  for (int64_t j = 0; j < n; ++j) {
    p[j] = p[j] * scale + (bias ? bias[j] : 0.f);
    mx = p[j] > mx ? p[j] : mx;
  }
  if (mx == -INFINITY) { // every key masked: uniform, as HF's min-filled masks give
    for (int64_t j = 0; j < n; ++j)
      p[j] = 0.f;
    mx = 0.f;
  }
  float acc[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
    for (int k = 0; k < L; ++k) {
      p[j + k] = expNonPositive(p[j + k] - mx);
      acc[k] += p[j + k];
    }
  float sum = reduce(acc);
  for (; j < n; ++j) {
    p[j] = expNonPositive(p[j] - mx);
    sum += p[j];
  }
  for (int64_t e = 0; e < D; ++e)
    o[e] = 0.f;
  for (int64_t jj = 0; jj < n; ++jj)
    axpy(p[jj] / sum, values[jj], o, D);
}

} // namespace genrt::cpu
