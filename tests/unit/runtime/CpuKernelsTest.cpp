// runtime/cpu kernels against naive double-precision loops, at sizes that
// cross the matmul blocking (NB = 256, KB = 128) and with odd remainders.
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<float> randomVec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

TEST(CpuKernels, MatmulMatchesNaive) {
  struct Case { int64_t M, N, K; };
  // One row (the GEMV path), small and blocked shapes, K = 0.
  for (Case c : {Case{1, 1, 1}, Case{1, 300, 130}, Case{3, 300, 130}, Case{17, 513, 257}, Case{5, 7, 0}}) {
    auto a = randomVec(c.M * c.K, 1), b = randomVec(c.K * c.N, 2);
    std::vector<float> bt(c.N * c.K);
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t n = 0; n < c.N; ++n)
        bt[n * c.K + k] = b[k * c.N + n];
    std::vector<float> y(c.M * c.N, 99.f), yt(c.M * c.N, 99.f);
    genrt::cpu::matmul(a.data(), b.data(), y.data(), c.M, c.N, c.K);
    genrt::cpu::matmul(a.data(), bt.data(), yt.data(), c.M, c.N, c.K, /*transB=*/true);
    double maxDiff = 0;
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double ref = 0;
        for (int64_t k = 0; k < c.K; ++k)
          ref += double(a[m * c.K + k]) * b[k * c.N + n];
        maxDiff = std::max(maxDiff, std::fabs(y[m * c.N + n] - ref));
        // b as stored [N, K] (transpose_b) is read in place: a BLAS may sum in
        // another order, so the layouts agree to rounding, not bit for bit.
        maxDiff = std::max(maxDiff, std::fabs(yt[m * c.N + n] - ref));
      }
    EXPECT_LT(maxDiff, 1e-4) << c.M << "x" << c.N << "x" << c.K;
  }
}

TEST(CpuKernels, SoftmaxAlongMiddleAxis) {
  const int64_t outer = 2, n = 5, inner = 3;
  auto x = randomVec(outer * n * inner, 3);
  auto y = x;
  genrt::cpu::softmax(y.data(), outer, n, inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      double mx = -1e30, sum = 0;
      for (int64_t i = 0; i < n; ++i)
        mx = std::max(mx, double(x[(o * n + i) * inner + j]));
      for (int64_t i = 0; i < n; ++i)
        sum += std::exp(x[(o * n + i) * inner + j] - mx);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(y[(o * n + i) * inner + j], std::exp(x[(o * n + i) * inner + j] - mx) / sum,
                    1e-6);
    }
}

TEST(CpuKernels, SoftmaxOfFullyMaskedRowIsNaN) {
  std::vector<float> x = {-INFINITY, -INFINITY, 1.f, 2.f};
  genrt::cpu::softmaxRows(x.data(), 2, 2);
  EXPECT_TRUE(std::isnan(x[0]) && std::isnan(x[1]));
  EXPECT_NEAR(x[2] + x[3], 1.f, 1e-6);
}

TEST(CpuKernels, Norms) {
  const int64_t rows = 3, n = 70;
  auto x = randomVec(rows * n, 4), scale = randomVec(n, 5), bias = randomVec(n, 6);
  std::vector<float> ln(rows * n), rms(rows * n);
  genrt::cpu::layerNormRows(x.data(), scale.data(), bias.data(), ln.data(), rows, n, 1e-5f);
  genrt::cpu::rmsNormRows(x.data(), scale.data(), rms.data(), rows, n, 1e-6f);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0, ms = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += x[r * n + i] / double(n);
    for (int64_t i = 0; i < n; ++i) {
      var += (x[r * n + i] - mean) * (x[r * n + i] - mean) / n;
      ms += double(x[r * n + i]) * x[r * n + i] / n;
    }
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(ln[r * n + i], (x[r * n + i] - mean) / std::sqrt(var + 1e-5) * scale[i] + bias[i], 1e-5);
      EXPECT_NEAR(rms[r * n + i], x[r * n + i] / std::sqrt(ms + 1e-6) * scale[i], 1e-5);
    }
  }
}

TEST(CpuKernels, MeanAxis) {
  auto x = randomVec(2 * 4 * 3, 7);
  std::vector<float> y(2 * 3);
  genrt::cpu::meanAxis(x.data(), y.data(), 2, 4, 3);
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t j = 0; j < 3; ++j) {
      double s = 0;
      for (int64_t i = 0; i < 4; ++i)
        s += x[(o * 4 + i) * 3 + j];
      EXPECT_NEAR(y[o * 3 + j], s / 4, 1e-6);
    }
}

TEST(CpuKernels, Activations) {
  for (float x : {-6.f, -1.f, -0.1f, 0.f, 0.3f, 2.f, 8.f}) {
    EXPECT_NEAR(genrt::cpu::geluErf(x), 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(genrt::cpu::geluTanh(x),
                0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))), 1e-6);
    EXPECT_NEAR(genrt::cpu::silu(x), x / (1 + std::exp(-double(x))), 1e-6);
  }
}

} // namespace
