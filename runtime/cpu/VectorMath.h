// One attention row in f32, the loop every CPU attention op runs per (token,
// head): written for the vectoriser (fixed-width partial sums, no
// aliasing), built for AVX-512, AVX2 and the baseline and chosen at load by
// the CPU's features — one dispatch per row, not per key. Partial sums are
// added in one fixed order, so a row's result does not depend on the thread
// that computes it.
#pragma once
#include <cstdint>

namespace genrt::cpu {

/// o = softmax(scale · q·keys[j] + bias[j]) · values[j] over j in [0, n),
/// rows of D floats; bias may be null; p: n floats of scratch. Scores of
/// -inf (masked) get weight 0; exp is a polynomial within 2 ulp of expf.
void attendRowF32(const float *q, const float *const *keys, const float *const *values, int64_t n, int64_t D,
                  float scale, const float *bias, float *p, float *o);

} // namespace genrt::cpu
