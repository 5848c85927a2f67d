#include "runtime/cpu/Activation.h"

#include "runtime/cpu/ExpPoly.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/VectorClones.h"

namespace genrt::cpu {

GENC_VECTOR_CLONES void geluTanhRow(float *__restrict x, int64_t n) {
  const float kBeta = 0.79788456080286536f, kKappa = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kBeta * (v + kKappa * v * v * v);
    // tanh |u| = (1 - e) / (1 + e), e = exp(-2 |u|) <= 1: no overflow.
    const float e = expNonPositive(-2.f * std::fabs(u));
    const float t = std::copysign((1.f - e) / (1.f + e), u);
    x[i] = 0.5f * v * (1.f + t);
  }
}

GENC_VECTOR_CLONES void sigmoidRow(const float *__restrict x, float *__restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = sigmoid(x[i]);
}

GENC_VECTOR_CLONES void siluRow(const float *__restrict x, float *__restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = silu(x[i]);
}

} // namespace genrt::cpu
