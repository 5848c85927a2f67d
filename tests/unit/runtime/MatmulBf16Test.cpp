// cpu/MatmulBf16: bf16 weights read as stored against the f32 product of the
// same (widened) weights, for both layouts, the matrix-vector rows (M <= 8)
// and the widen-then-sgemm rows, on the calling thread and on a pool; and the
// pool never changes a bit.
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/MatmulBf16.h"
#include "runtime/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace genrt::cpu;

uint16_t toBf16(float f) { // round to nearest even, as genc's weight cast
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

TEST(MatmulBf16, MatchesTheF32ProductOfTheWidenedWeights) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  ThreadPool pool(3);
  for (int64_t M : {1, 2, 3, 8, 9, 20})
    for (int64_t K : {1, 17, 64, 130})
      for (int64_t N : {1, 70, 300})
        for (bool transB : {false, true}) {
          std::vector<float> a(M * K), wide(K * N);
          std::vector<uint16_t> w(K * N);
          for (float &x : a)
            x = u(rng);
          for (size_t i = 0; i < w.size(); ++i) {
            w[i] = toBf16(u(rng));
            wide[i] = bf16ToFloat(w[i]);
          }
          std::vector<float> want(M * N), got(M * N, NAN), pooled(M * N, NAN);
          matmul(a.data(), wide.data(), want.data(), M, N, K, transB);
          matmulBf16(a.data(), w.data(), got.data(), M, N, K, transB, nullptr);
          matmulBf16(a.data(), w.data(), pooled.data(), M, N, K, transB, &pool);
          for (int64_t i = 0; i < M * N; ++i) {
            const int64_t m = i / N, n = i % N;
            double mag = 0; // sum |a·w|: the scale of the rounding
            for (int64_t k = 0; k < K; ++k)
              mag += std::fabs(a[m * K + k] * wide[transB ? n * K + k : k * N + n]);
            ASSERT_NEAR(got[i], want[i], 1e-6 * (mag + 1)) << "M " << M << " K " << K << " N " << N << " transB " << transB;
            ASSERT_EQ(std::memcmp(&got[i], &pooled[i], 4), 0) << "the pool changed a bit at " << i << ": " << got[i] << " vs " << pooled[i] << " M " << M << " K " << K << " N " << N << " transB " << transB;
          }
        }
}

} // namespace
