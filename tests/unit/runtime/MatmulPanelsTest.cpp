// runtime/cpu/MatmulPanels: a weight laid out in panels gives, for any row
// count, the bits the few-rows kernel gives for up to 8 rows and cpu::matmul
// gives for any (one sum over k in order each: the executor's packed weights
// and the interpreter's unpacked ones agree bit for bit), within 1e-6 of a
// double reference, whatever the thread pool's pieces. Widths that are and
// are not multiples of the 32-column panels. Skipped on a CPU with neither
// AVX-512 nor AVX2 + FMA.
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/MatmulFewRows.h"
#include "runtime/cpu/MatmulPanels.h"
#include "runtime/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

TEST(MatmulPanels, SameBitsAsTheUnpackedKernelsAndCloseToDouble) {
  if (!genrt::cpu::havePanelKernels())
    GTEST_SKIP() << "neither AVX-512 nor AVX2 + FMA on this CPU";
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.f, 1.f);
  genrt::cpu::ThreadPool pool(2);
  int checked = 0;
  for (int64_t M : {1, 3, 8, 9, 12, 13, 40})
    for (int64_t N : {16, 31, 32, 70, 200})
      for (int64_t K : {1, 33, 300}) {
        std::vector<float> a(M * K), w(K * N), panels(genrt::cpu::panelFloats(K, N), NAN);
        for (float &x : a)
          x = g(rng);
        for (float &x : w)
          x = g(rng);
        genrt::cpu::packPanels(w.data(), K, N, panels.data());
        std::vector<float> y1(M * N, NAN), y2(M * N, NAN), y3(M * N, NAN);
        ASSERT_TRUE(genrt::cpu::matmulPanels(a.data(), panels.data(), y1.data(), M, N, K, nullptr));
        ASSERT_TRUE(genrt::cpu::matmulPanels(a.data(), panels.data(), y2.data(), M, N, K, &pool));
        genrt::cpu::matmul(a.data(), w.data(), y3.data(), M, N, K, /*transB=*/false, &pool);
        std::vector<float> y4(M * N, NAN);
        const bool few = genrt::cpu::matmulFewRows(a.data(), w.data(), y4.data(), M, N, K, nullptr);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              want += double(a[m * K + k]) * w[k * N + n];
              mag += std::fabs(double(a[m * K + k]) * w[k * N + n]);
            }
            const int64_t i = m * N + n;
            ASSERT_NEAR(y1[i], want, 1e-6 * (1 + mag)) << M << "x" << N << "x" << K;
            ASSERT_EQ(y1[i], y2[i]) << "piece-dependent at " << m << "," << n;
            ASSERT_EQ(y1[i], y3[i]) << "cpu::matmul differs at " << m << "," << n << " of " << M << "x" << N;
            if (few)
              ASSERT_EQ(y1[i], y4[i]) << "the few-rows kernel differs at " << m << "," << n;
          }
        ++checked;
      }
  EXPECT_EQ(checked, 7 * 5 * 3);
}

} // namespace
