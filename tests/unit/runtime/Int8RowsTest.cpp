// runtime/kv/Int8Rows.h: a row as int8 codes and one scale. Every value comes
// back within half a step (max|row| / 254) of itself, the largest exactly;
// zeros and non-finite values do not poison the scale.
#include "runtime/kv/Int8Rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

TEST(Int8Rows, EveryValueComesBackWithinHalfAStep) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.f, 3.f);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t D = 1 + rng() % 130;
    std::vector<float> row(static_cast<size_t>(D)), back(static_cast<size_t>(D));
    for (float &x : row)
      x = n(rng) * (trial % 7 == 0 ? 1e-20f : 1.f);
    std::vector<int8_t> codes(static_cast<size_t>(D));
    float scale = -1.f;
    genrt::int8RowStore(row.data(), D, codes.data(), scale);
    genrt::int8RowLoad(codes.data(), scale, D, back.data());
    float amax = 0.f;
    for (float x : row)
      amax = std::fmax(amax, std::fabs(x));
    EXPECT_FLOAT_EQ(scale, amax / 127.f);
    for (int64_t i = 0; i < D; ++i) {
      EXPECT_LE(std::fabs(back[size_t(i)] - row[size_t(i)]), 0.5f * scale * (1.f + 1e-5f)) << trial << " " << i;
      EXPECT_GE(codes[size_t(i)], -127);
      if (std::fabs(row[size_t(i)]) == amax)
        EXPECT_EQ(std::abs(int(codes[size_t(i)])), 127);
    }
  }
}

TEST(Int8Rows, ZerosAndNonFiniteValuesKeepTheRowReadable) {
  std::vector<float> zeros(8, 0.f), back(8, 1.f);
  std::vector<int8_t> codes(8, 1);
  float scale = -1.f;
  genrt::int8RowStore(zeros.data(), 8, codes.data(), scale);
  genrt::int8RowLoad(codes.data(), scale, 8, back.data());
  EXPECT_EQ(scale, 0.f);
  for (float x : back)
    EXPECT_EQ(x, 0.f);
  std::vector<float> odd = {1.f, std::numeric_limits<float>::infinity(), -2.f, std::nanf("")};
  genrt::int8RowStore(odd.data(), 4, codes.data(), scale);
  EXPECT_FLOAT_EQ(scale, 2.f / 127.f); // the finite values set it
  EXPECT_EQ(codes[1], 127);             // +inf clamps
  EXPECT_EQ(codes[2], -127);
  EXPECT_EQ(codes[3], 0);               // NaN reads back as 0
}

} // namespace
