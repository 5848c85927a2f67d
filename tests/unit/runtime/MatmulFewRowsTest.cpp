// matmulFewRows (a decode step's 2..8-row GEMM, AVX-512 or AVX2) against a double
// reference, on widths that are and are not multiples of its 64-column
// blocks, and bit for bit the same with and without the thread pool (a
// column's sum must not depend on the piece it falls in). Skipped on a CPU
// with neither AVX-512 nor AVX2 + FMA, where it declines and BLAS runs.
#include "runtime/cpu/MatmulFewRows.h"
#include "runtime/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

TEST(MatmulFewRows, MatchesDoubleAndIgnoresThePieces) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.f, 1.f);
  genrt::cpu::ThreadPool pool(2);
  int checked = 0;
  for (int64_t M : {1, 2, 5, 8})
    for (int64_t N : {16, 70, 200, 576})
      for (int64_t K : {1, 33, 576}) {
        std::vector<float> a(M * K), w(K * N), y1(M * N, NAN), y2(M * N, NAN);
        for (float &x : a)
          x = g(rng);
        for (float &x : w)
          x = g(rng);
        if (!genrt::cpu::matmulFewRows(a.data(), w.data(), y1.data(), M, N, K, nullptr))
          GTEST_SKIP() << "no AVX-512 on this CPU";
        ASSERT_TRUE(genrt::cpu::matmulFewRows(a.data(), w.data(), y2.data(), M, N, K, &pool));
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              want += double(a[m * K + k]) * w[k * N + n];
              mag += std::fabs(double(a[m * K + k]) * w[k * N + n]);
            }
            ASSERT_NEAR(y1[m * N + n], want, 1e-6 * (1 + mag)) << M << "x" << N << "x" << K;
            ASSERT_EQ(y1[m * N + n], y2[m * N + n]) << "piece-dependent at " << m << "," << n;
          }
        ++checked;
      }
  EXPECT_EQ(checked, 48);
}

} // namespace
