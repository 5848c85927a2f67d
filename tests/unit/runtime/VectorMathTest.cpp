// The CPU's vectorised rows: attendRowF32 (the attention row) against the same softmax attention
// in double precision: random rows, key counts that are and are not
// multiples of the 4-key blocks, head dims below, at and off the 16-wide
// vectors, a bias, and far-apart scores (exp's underflow path).
#include "runtime/cpu/Activation.h"
#include "runtime/cpu/VectorMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

// Returns the largest |score|: f32 scores carry an error of about eps
// times it into every weight, whatever exp does.
double reference(const std::vector<float> &q, const std::vector<std::vector<float>> &k,
                 const std::vector<std::vector<float>> &v, float scale, const std::vector<float> &bias,
                 std::vector<double> &o) {
  const size_t n = k.size(), D = q.size();
  std::vector<double> s(n);
  double mx = -INFINITY, sum = 0, big = 0;
  for (size_t j = 0; j < n; ++j) {
    double d = 0;
    for (size_t e = 0; e < D; ++e)
      d += double(q[e]) * k[j][e];
    s[j] = d * scale + (bias.empty() ? 0.0 : bias[j]);
    mx = std::max(mx, s[j]);
    big = std::max(big, std::fabs(s[j]));
  }
  for (double &x : s)
    sum += (x = std::exp(x - mx));
  o.assign(D, 0.0);
  for (size_t j = 0; j < n; ++j)
    for (size_t e = 0; e < D; ++e)
      o[e] += s[j] / sum * v[j][e];
  return big;
}

TEST(VectorMath, AttendRowMatchesDoublePrecision) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.f, 1.f);
  int rows = 0;
  for (int64_t D : {3, 16, 64, 80, 128})
    for (int64_t n : {1, 3, 4, 7, 64, 129})
      for (float spread : {1.f, 30.f}) { // 30: scores 100s apart, most weights underflow
        std::vector<float> q(D), bias;
        std::vector<std::vector<float>> k(n, std::vector<float>(D)), v(n, std::vector<float>(D));
        for (float &x : q)
          x = g(rng) * spread;
        for (auto *m : {&k, &v})
          for (auto &r : *m)
            for (float &x : r)
              x = g(rng);
        if (n % 2)
          for (int64_t j = 0; j < n; ++j)
            bias.push_back(g(rng));
        std::vector<const float *> kp, vp;
        for (int64_t j = 0; j < n; ++j) {
          kp.push_back(k[j].data());
          vp.push_back(v[j].data());
        }
        std::vector<float> p(n), o(D, NAN);
        const float scale = 1.f / std::sqrt(float(D));
        genrt::cpu::attendRowF32(q.data(), kp.data(), vp.data(), n, D, scale, bias.empty() ? nullptr : bias.data(),
                                 p.data(), o.data());
        std::vector<double> want;
        const double big = reference(q, k, v, scale, bias, want);
        // A few float32 roundings of each score and weight, no more.
        const double tol = 4 * 1.2e-7 * (1 + big);
        for (int64_t e = 0; e < D; ++e)
          EXPECT_NEAR(o[e], want[e], tol * (1 + std::fabs(want[e]))) << "D " << D << " n " << n << " e " << e;
        ++rows;
      }
  EXPECT_EQ(rows, 60);
}

} // namespace

namespace {

// tanh-GELU against the double-precision formula over [-12, 12] (tanh's
// saturation both ways, the cancellation near 0), and each element the same
// bits whether it is computed alone (the gelu kernel) or inside a row (a
// linear layer's epilogue): vector body and scalar tail round alike.
TEST(Activation, GeluTanhRowMatchesDoubleAndItsScalarSelf) {
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 0.0137f)
    x.push_back(v);
  x.push_back(0.f);
  x.push_back(1e-6f);
  x.push_back(-1e-6f);
  std::vector<float> row = x;
  genrt::cpu::geluTanhRow(row.data(), int64_t(row.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], want = 0.5 * v * (1 + std::tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(row[i], want, 4e-7 * (1 + std::fabs(want))) << "x " << x[i];
    float alone = x[i];
    genrt::cpu::geluTanhRow(&alone, 1);
    EXPECT_EQ(alone, row[i]) << "x " << x[i];
  }
}

} // namespace
