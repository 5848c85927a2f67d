// The host log-softmax's sum (runtime/choice/SoftmaxSum.h) against libm's exp
// summed in long double, on rows as logits come: wide ranges, -inf bans,
// lengths that leave a tail past the vector lanes.
#include "runtime/choice/SoftmaxSum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace genrt;

static const float kInf = std::numeric_limits<float>::infinity();

static long double reference(const std::vector<float> &row, float mx) {
  long double s = 0;
  for (float x : row)
    s += std::exp(static_cast<long double>(x - mx));
  return s;
}

TEST(SoftmaxSum, MatchesLibmAcrossRowsAndLengths) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 7, 8, 9, 1000, 32000, 50257, 151936}) {
    for (float spread : {0.5f, 8.f, 40.f, 300.f}) {
      std::normal_distribution<float> d(0.f, spread);
      std::vector<float> row(static_cast<size_t>(n));
      for (float &x : row)
        x = d(rng);
      for (int64_t v = 3; v < n; v += 11)
        row[size_t(v)] = -kInf; // banned tokens add nothing
      const float mx = *std::max_element(row.begin(), row.end());
      const double got = sumExpShifted(row.data(), n, mx), want = double(reference(row, mx));
      // A double sum of n terms rounds by up to ~n/2 ulps whatever the exp:
      // libm's exp summed in double is off from `want` by as much.
      EXPECT_NEAR(got, want, want * 1e-12) << "n " << n << " spread " << spread;
    }
  }
}

TEST(SoftmaxSum, EdgesOfItsRange) {
  // t = 0 exactly, t at the underflow edge, t far below it, and -inf.
  std::vector<float> row = {0.f, -700.f, -708.f, -709.f, -1e30f, -kInf, -0.5f, -745.f, -20.f};
  const double got = sumExpShifted(row.data(), int64_t(row.size()), 0.f);
  double want = 0;
  for (float x : row)
    want += std::exp(double(x)); // e^-709 and below: subnormal or 0, under 1e-300
  EXPECT_NEAR(got, want, want * 1e-15);
  // Every entry at the max: the count.
  std::vector<float> flat(37, 3.25f);
  EXPECT_EQ(sumExpShifted(flat.data(), 37, 3.25f), 37.0);
}

TEST(SoftmaxSum, NanPropagates) {
  std::vector<float> row(20, 0.f);
  row[13] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(sumExpShifted(row.data(), 20, 0.f)));
}
