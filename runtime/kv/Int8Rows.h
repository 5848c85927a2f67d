// A row of values as int8 codes and one f32 scale (the i8 cross cache,
// runtime/kv/KvLayout.h): s = max |x| / 127, code = round-half-even(x / s)
// clamped to [-127, 127], value = code * s. A row of zeros (or of
// non-finite values only) keeps s = 0 and reads back as zeros. The GPU's
// kernels use the same arithmetic (f32 division, rint), so the CPU
// executor stays the reference bit for bit.
#pragma once
#include <cmath>
#include <cstdint>

namespace genrt {

inline float int8RowScale(const float *row, int64_t n) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(row[i]))
      amax = std::fmax(amax, std::fabs(row[i]));
  return amax / 127.f;
}

inline void int8RowStore(const float *row, int64_t n, int8_t *codes, float &scale) {
  scale = int8RowScale(row, n);
  for (int64_t i = 0; i < n; ++i) {
    float q = scale > 0.f ? std::rint(row[i] / scale) : 0.f;
    q = std::isnan(q) ? 0.f : std::fmin(127.f, std::fmax(-127.f, q));
    codes[i] = static_cast<int8_t>(q);
  }
}

inline void int8RowLoad(const int8_t *codes, float scale, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(codes[i]) * scale;
}

} // namespace genrt
