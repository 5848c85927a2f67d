// passes/analysis/NBitsQuantizer: round to nearest into runtime/plan/NBitsLayout.h,
// read back by the CPU executor's dequantizer: every weight within half a
// step of its float value (a clamped extreme within one), for both storage
// layouts ([K, N] and [N, K]), 4 and 8 bits, symmetric and with zero
// points, K not a multiple of the block (padding reads as 0); a block of one
// repeated value is exact up to its f16 scale; scales outside f16's normal
// range make the scales f32.
#include "passes/analysis/NBitsQuantizer.h"
#include "runtime/cpu/MatmulNBits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace genc;

namespace {

// W[k, n] as the CPU executor reads the quantized matrix.
std::vector<float> dequantized(const NBitsWeights &q, const genrt::NBitsShape &s) {
  std::vector<float> scales(s.N * s.blocks());
  for (size_t i = 0; i < scales.size(); ++i)
    scales[i] = static_cast<float>(q.scales->getDouble(static_cast<int64_t>(i)));
  genrt::cpu::NBitsMatrix m;
  m.shape = s;
  m.codes = q.codes->data<uint8_t>();
  m.scales = scales.data();
  m.zeroPoints = q.zeroPoints ? genrt::ZeroPointKind::Packed : genrt::ZeroPointKind::Default;
  m.zpPacked = q.zeroPoints ? q.zeroPoints->data<uint8_t>() : nullptr;
  std::vector<float> cols(s.N * s.K);
  genrt::cpu::dequantizeNBits(m, 0, s.N, cols.data()); // [N, K]
  return cols;
}

TEST(NBitsQuantizer, RoundsToNearestInBothLayouts) {
  std::mt19937 rng(4803);
  std::normal_distribution<float> normal(0.f, 0.02f);
  for (int64_t bits : {4, 8})
    for (bool zp : {false, true})
      for (bool transposed : {false, true})
        for (int64_t K : {32, 75}) {
          const genrt::NBitsShape s{bits, 32, K, 13};
          Tensor w(DType::F32, transposed ? std::vector<int64_t>{s.N, K} : std::vector<int64_t>{K, s.N});
          for (int64_t i = 0; i < w.numElements(); ++i)
            w.setDouble(i, normal(rng) + (zp ? 0.01f : 0.f)); // off-centre blocks for the zero points
          NBitsWeights q;
          ASSERT_EQ(quantizeNBits(w, transposed, s, zp, q), "");
          ASSERT_EQ(q.codes->shape(), (std::vector<int64_t>{s.N, s.blocks(), s.blobBytes()}));
          ASSERT_EQ(q.scales->dtype(), DType::F16);
          ASSERT_EQ(static_cast<bool>(q.zeroPoints), zp);
          const std::vector<float> got = dequantized(q, s);
          for (int64_t n = 0; n < s.N; ++n)
            for (int64_t k = 0; k < K; ++k) {
              const float want = static_cast<float>(w.getDouble(transposed ? n * K + k : k * s.N + n));
              const float step = std::fabs(static_cast<float>(q.scales->getDouble(n * s.blocks() + k / 32)));
              const float err = std::fabs(got[n * K + k] - want);
              // Clamped extremes (4-bit symmetric: +8 steps is 7; a rounded
              // zero point) may be a whole step off; the rest half a step.
              ASSERT_LE(err, step * (1.f + 8.f / 2048.f) + 1e-9f) << bits << " " << zp << " " << transposed;
              if (err > step * 0.5001f) {
                ASSERT_TRUE(bits == 4 || zp) << "only 4-bit or zero-point extremes clamp: n " << n << " k " << k;
              }
            }
        }
}

TEST(NBitsQuantizer, KeepsRepeatedValuesAndWidensTinyScales) {
  const genrt::NBitsShape s{4, 32, 64, 2};
  Tensor w(DType::F32, {64, 2});
  for (int64_t k = 0; k < 64; ++k) {
    w.setDouble(k * 2, 0.375);        // column 0: one value repeated
    w.setDouble(k * 2 + 1, k * 1e-7); // column 1: scales below f16's normal range
  }
  NBitsWeights q;
  ASSERT_EQ(quantizeNBits(w, false, s, /*zeroPoint=*/true, q), "");
  EXPECT_EQ(q.scales->dtype(), DType::F32);
  const std::vector<float> got = dequantized(q, s);
  for (int64_t k = 0; k < 64; ++k) {
    EXPECT_EQ(got[k], 0.375f) << k;
    EXPECT_NEAR(got[64 + k], k * 1e-7, 0.5 * 6.3e-6 / 15 + 1e-12) << k;
  }
}

TEST(NBitsQuantizer, RefusesNonFiniteWeights) {
  Tensor w(DType::F32, {32, 1});
  w.setDouble(5, NAN);
  NBitsWeights q;
  EXPECT_NE(quantizeNBits(w, false, {8, 32, 32, 1}, false, q).find("non-finite"), std::string::npos);
}

} // namespace
