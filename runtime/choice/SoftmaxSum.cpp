#include "runtime/choice/SoftmaxSum.h"

#include "runtime/cpu/VectorClones.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace genrt {

namespace {

// e^t for t <= 0: t = k ln2 + r, |r| <= ln2 / 2; e^r by its degree-11
// Taylor polynomial (truncation under 1e-14 relative); k rounded by the
// 1.5 * 2^52 trick and put into the exponent bits, so that every step is a
// plain vector operation (no nearbyint, no libm call, no branch). Below
// -708 (-inf included) it gives e^-708 ~ 3e-308 rather than 0: nothing,
// next to the 1 the row's largest entry adds. A NaN stays NaN.
inline __attribute__((always_inline)) double expNonPositiveD(double t) {
  t = std::max(t, -708.0);
  constexpr double kShift = 6755399441055744.0; // 1.5 * 2^52
  const double shifted = t * 1.4426950408889634 + kShift;
  const double k = shifted - kShift;
  const double r = (t - k * 0.6931471803691238) - k * 1.9082149292705877e-10;
  // Estrin's scheme: the same polynomial in a chain of 7 dependent steps
  // rather than Horner's 24 (the loop is latency-bound otherwise).
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double q0 = 1.0 + r, q1 = 0.5 + r * (1.0 / 6.0), q2 = 1.0 / 24.0 + r * (1.0 / 120.0),
               q3 = 1.0 / 720.0 + r * (1.0 / 5040.0), q4 = 1.0 / 40320.0 + r * (1.0 / 362880.0),
               q5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
  const double p = (q0 + q1 * r2) + (q2 + q3 * r2) * r4 + (q4 + q5 * r2) * r8;
  // Unsigned: k is negative (a signed left shift of it is undefined before
  // C++20) and a NaN's bits overflow the subtraction; wrapping is harmless
  // there, since p is NaN and so is the product.
  uint64_t kb, sb;
  std::memcpy(&kb, &shifted, sizeof kb);
  std::memcpy(&sb, &kShift, sizeof sb);
  const uint64_t bits = (kb - sb + 1023u) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

} // namespace

GENC_VECTOR_CLONES double sumExpShifted(const float *row, int64_t vocab, float mx) {
  constexpr int L = 8; // partial sums: the loop's vector lanes, fixed for every clone
  double acc[L] = {};
  int64_t v = 0;
  for (; v + L <= vocab; v += L)
    for (int j = 0; j < L; ++j)
      acc[j] += expNonPositiveD(double(row[v + j] - mx));
  double sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; v < vocab; ++v)
    sum += expNonPositiveD(double(row[v] - mx));
  return sum;
}

} // namespace genrt
