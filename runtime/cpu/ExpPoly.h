// exp for t <= 0, branch-free so that loops over it vectorise: shared by the
// attention rows (VectorMath.cpp) and tanh-GELU (Activation.cpp). t = k ln2
// + r with |r| <= ln2 / 2; e^r by its degree-6 Taylor polynomial (truncation
// under 2e-7 relative); 2^k put into the exponent bits. Below -87 (and at
// -inf) it gives 0: expf's results there are subnormal or 0.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace genrt::cpu {

inline __attribute__((always_inline)) float expNonPositive(float t) {
  const bool under = !(t >= -87.0f);
  t = under ? -87.0f : t;
  const float k = std::nearbyint(t * 1.44269504088896341f);
  const float r = (t - k * 0.693145751953125f) - k * 1.42860682030941723212e-6f;
  float p = 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return under ? 0.f : p * scale;
}

} // namespace genrt::cpu
