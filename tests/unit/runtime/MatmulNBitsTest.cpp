// cpu/MatmulNBits: 4-bit and 8-bit block-quantized weights against a
// double-precision sum over the weights dequantized from the layout's
// definition (runtime/plan/NBitsLayout.h), for every decode kernel this CPU runs
// (AVX-512, AVX2, the plain loops), the panel path of many rows, every
// zero-point form, blocks of 16 to 128 and K not a multiple of the block;
// dequantization is exact, and the thread pool never changes a bit.
#include "runtime/Tensor.h"
#include "runtime/cpu/MatmulNBits.h"
#include "runtime/cpu/MatmulNBitsInt8.h"
#include "runtime/cpu/MatmulNBitsRows.h"
#include "runtime/cpu/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace genrt;
using namespace genrt::cpu;

struct Case {
  NBitsShape s;
  ZeroPointKind zp;
  std::vector<uint8_t> codes, zpPacked;
  std::vector<float> scales, zpFloat;
  NBitsMatrix matrix() const {
    NBitsMatrix w;
    w.shape = s;
    w.codes = codes.data();
    w.scales = scales.data();
    w.zeroPoints = zp;
    w.zpPacked = zpPacked.data();
    w.zpFloat = zpFloat.data();
    return w;
  }
  // W[k, n] from the definition: the code's nibble or byte, (q - z) in f32
  // times the scale in f32.
  float weight(int64_t k, int64_t n) const {
    const int64_t j = k / s.blockSize, i = k % s.blockSize, blocks = s.blocks();
    const uint8_t *blob = codes.data() + (n * blocks + j) * s.blobBytes();
    const int q = s.bits == 8 ? blob[i] : (i % 2 ? blob[i / 2] >> 4 : blob[i / 2] & 15);
    float z = static_cast<float>(1 << (s.bits - 1));
    if (zp == ZeroPointKind::Float)
      z = zpFloat[n * blocks + j];
    if (zp == ZeroPointKind::Packed) {
      const uint8_t b = zpPacked[n * s.zeroPointBytes() + (s.bits == 8 ? j : j / 2)];
      z = static_cast<float>(s.bits == 8 ? b : (j % 2 ? b >> 4 : b & 15));
    }
    return (static_cast<float>(q) - z) * scales[n * blocks + j];
  }
};

Case makeCase(std::mt19937 &rng, NBitsShape s, ZeroPointKind zp) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> normal(0.f, 1.f);
  Case c{s, zp, {}, {}, {}, {}};
  const int64_t blocks = s.blocks();
  c.codes.resize(s.N * blocks * s.blobBytes());
  for (uint8_t &b : c.codes)
    b = static_cast<uint8_t>(byte(rng));
  c.scales.resize(s.N * blocks);
  for (float &x : c.scales)
    x = halfToFloat(floatToHalf(normal(rng) * 0.05f)); // f16 scales, as GGUF's and genc's
  c.zpPacked.resize(s.N * s.zeroPointBytes());
  for (uint8_t &b : c.zpPacked)
    b = static_cast<uint8_t>(byte(rng));
  c.zpFloat.resize(s.N * blocks);
  for (float &x : c.zpFloat)
    x = normal(rng) * 3.f + static_cast<float>(1 << (s.bits - 1));
  return c;
}

std::vector<std::string> kernels() {
  std::vector<std::string> out;
  for (const char *k : {"scalar", "avx2", "avx512"})
    if (forceNBitsKernel(k))
      out.push_back(k);
  forceNBitsKernel("");
  return out;
}

TEST(MatmulNBits, DequantizesExactlyAsTheLayoutSays) {
  std::mt19937 rng(4801);
  for (int64_t bits : {4, 8})
    for (ZeroPointKind zp : {ZeroPointKind::Default, ZeroPointKind::Packed, ZeroPointKind::Float}) {
      const Case c = makeCase(rng, {bits, 32, 75, 9}, zp);
      std::vector<float> got(c.s.N * c.s.K);
      dequantizeNBits(c.matrix(), 0, c.s.N, got.data());
      for (int64_t n = 0; n < c.s.N; ++n)
        for (int64_t k = 0; k < c.s.K; ++k) {
          const float want = c.weight(k, n);
          ASSERT_EQ(std::memcmp(&got[n * c.s.K + k], &want, 4), 0) << "bits " << bits << " n " << n << " k " << k;
        }
    }
}

// y = a . w by each kernel in `names`, alone and on `pool`: within 1e-6 of
// `want` relative to `mag` (sum |a w|), and the pool never changes a bit.
void expectEveryKernel(const std::vector<std::string> &names, const std::vector<float> &a, const NBitsMatrix &w,
                       int64_t M, const std::vector<double> &want, const std::vector<double> &mag, ThreadPool &pool,
                       double &worst, NBitsShape s, ZeroPointKind zp) {
  const int64_t N = s.N;
  for (const std::string &kernel : names) {
    ASSERT_TRUE(forceNBitsKernel(kernel.c_str()));
    std::vector<float> got(M * N, NAN), pooled(M * N, NAN);
    matmulNBits(a.data(), w, got.data(), M, nullptr);
    matmulNBits(a.data(), w, pooled.data(), M, &pool);
    for (int64_t i = 0; i < M * N; ++i) {
      const double err = std::fabs(got[i] - want[i]) / (mag[i] + 1e-30);
      worst = std::max(worst, err);
      ASSERT_LE(err, 1e-6) << kernel << " bits " << s.bits << " block " << s.blockSize << " K " << s.K << " N " << N
                           << " M " << M << " zp " << int(zp) << " at " << i << ": " << got[i] << " vs " << want[i];
      ASSERT_EQ(std::memcmp(&got[i], &pooled[i], 4), 0) << kernel << ": the pool changed a bit at " << i;
    }
  }
  forceNBitsKernel("");
}

// A row's product is the same bits whatever rows share it (alone, among 2,
// 5 or 8, in a prompt of 13): a served request's greedy tokens are its
// batch-mode tokens. Every kernel, 4 and 8 bits, each zero-point kind.
TEST(MatmulNBits, ARowsBitsDoNotDependOnItsBatch) {
  std::mt19937 rng(4806);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const std::string &kernel : kernels()) {
    ASSERT_TRUE(forceNBitsKernel(kernel.c_str()));
    for (int64_t bits : {4, 8})
      for (int64_t bs : {16, 32, 64})
        for (ZeroPointKind zp : {ZeroPointKind::Default, ZeroPointKind::Packed, ZeroPointKind::Float}) {
          const int64_t K = 200, N = 37, M = 13;
          const Case c = makeCase(rng, {bits, bs, K, N}, zp);
          const NBitsMatrix w = c.matrix();
          std::vector<float> a(M * K);
          for (float &x : a)
            x = u(rng);
          std::vector<float> all(M * N, NAN);
          matmulNBits(a.data(), w, all.data(), M, nullptr);
          for (int64_t rows : {1, 2, 5, 8})
            for (int64_t m0 = 0; m0 + rows <= M; m0 += rows) {
              std::vector<float> part(rows * N, NAN);
              matmulNBits(a.data() + m0 * K, w, part.data(), rows, nullptr);
              ASSERT_EQ(std::memcmp(part.data(), all.data() + m0 * N, part.size() * 4), 0)
                  << kernel << " bits " << bits << " block " << bs << " zp " << int(zp) << ": rows " << m0 << ".."
                  << m0 + rows - 1 << " alone differ from the same rows among " << M;
            }
        }
  }
  forceNBitsKernel("");
}

TEST(MatmulNBits, MatchesADoubleSumOverTheDequantizedWeights) {
  std::mt19937 rng(4802);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  ThreadPool pool(3);
  const std::vector<std::string> names = kernels();
  ASSERT_FALSE(names.empty());
  double worst = 0;
  for (int64_t bits : {4, 8})
    for (int64_t bs : {16, 32, 64, 128})
      for (int64_t K : {16, 96, 200})
        for (int64_t N : {1, 37})
          for (ZeroPointKind zp : {ZeroPointKind::Default, ZeroPointKind::Packed, ZeroPointKind::Float}) {
            const Case c = makeCase(rng, {bits, bs, K, N}, zp);
            const NBitsMatrix w = c.matrix();
            for (int64_t M : {1, 2, 5, 8, 12}) {
              std::vector<float> a(M * K);
              for (float &x : a)
                x = u(rng);
              std::vector<double> want(M * N), mag(M * N);
              for (int64_t m = 0; m < M; ++m)
                for (int64_t n = 0; n < N; ++n)
                  for (int64_t k = 0; k < K; ++k) {
                    const double p = static_cast<double>(a[m * K + k]) * c.weight(k, n);
                    want[m * N + n] += p;
                    mag[m * N + n] += std::fabs(p);
                  }
              ASSERT_NO_FATAL_FAILURE(expectEveryKernel(names, a, w, M, want, mag, pool, worst,
                                                        {bits, bs, K, N}, zp));
            }
          }
  std::printf("max |got - double| / sum |a w| = %.3g over kernels:", worst);
  for (const std::string &k : names)
    std::printf(" %s", k.c_str());
  std::printf("\n");
}

// accuracy_level 4: each row's block quantized to int8 here, independently of
// the kernel (max |a| / 127, round to nearest even), then a double sum of the
// dequantized weights times the dequantized activations.
TEST(MatmulNBits, Int8ActivationsMatchADoubleSumOverQuantizedRows) {
  std::mt19937 rng(4803);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  ThreadPool pool(3);
  const std::vector<std::string> names = kernels();
  double worst = 0;
  for (int64_t bits : {4, 8})
    for (int64_t bs : {16, 32, 64})
      for (int64_t K : {32, 200})
        for (int64_t N : {1, 37})
          for (ZeroPointKind zp : {ZeroPointKind::Default, ZeroPointKind::Packed, ZeroPointKind::Float}) {
            const Case c = makeCase(rng, {bits, bs, K, N}, zp);
            NBitsMatrix w = c.matrix();
            w.accuracyLevel = 4;
            for (int64_t M : {1, 3, 8, 12}) {
              std::vector<float> a(M * K);
              for (float &x : a)
                x = u(rng) * (u(rng) > 0.8f ? 8.f : 1.f); // some blocks with outliers
              std::vector<double> want(M * N), mag(M * N);
              for (int64_t m = 0; m < M; ++m)
                for (int64_t j = 0; j * bs < K; ++j) {
                  const int64_t k0 = j * bs, k1 = std::min(K, k0 + bs);
                  float amax = 0.f;
                  for (int64_t k = k0; k < k1; ++k)
                    amax = std::max(amax, std::fabs(a[m * K + k]));
                  for (int64_t k = k0; k < k1; ++k) {
                    const long q = std::lrint(a[m * K + k] * (127.f / amax));
                    const double xd = static_cast<double>(std::clamp<long>(q, -127, 127)) * (amax / 127.f);
                    for (int64_t n = 0; n < N; ++n) {
                      want[m * N + n] += xd * c.weight(k, n);
                      mag[m * N + n] += std::fabs(xd * c.weight(k, n));
                    }
                  }
                }
              ASSERT_NO_FATAL_FAILURE(expectEveryKernel(names, a, w, M, want, mag, pool, worst,
                                                        {bits, bs, K, N}, zp));
            }
          }
  std::printf("int8 activations: max |got - double| / sum |xq w| = %.3g; VNNI on this CPU: %s\n", worst,
              cpuHasVnni() ? "yes" : "no");
}

// Rows laid out for the vector kernels (4-bit blocks of 32 in pairs) give
// the plain loops the same integers, so the same results but for the sums'
// rounding; an odd number of blocks leaves the last one unpaired.
TEST(MatmulNBits, Int8RowsInPairsReadTheSameEitherWay) {
  if (!cpuHasAvx2())
    GTEST_SKIP() << "no AVX2 + FMA here";
  std::mt19937 rng(4805);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t K : {64, 96, 200})
    for (ZeroPointKind zp : {ZeroPointKind::Default, ZeroPointKind::Packed, ZeroPointKind::Float}) {
      const Case c = makeCase(rng, {4, 32, K, 13}, zp);
      NBitsMatrix w = c.matrix();
      w.accuracyLevel = 4;
      for (int64_t M : {1, 3}) {
        std::vector<float> a(M * K);
        for (float &x : a)
          x = u(rng);
        Int8Rows paired, plain;
        quantizeNBitsRows(w.shape, a.data(), M, paired, Int8Kernel::Vnni);
        quantizeNBitsRows(w.shape, a.data(), M, plain, Int8Kernel::Loops);
        ASSERT_TRUE(paired.pairs);
        ASSERT_FALSE(plain.pairs);
        std::vector<float> vnni(M * 13), loops(M * 13), ref(M * 13);
        nbitsInt8Rows(paired, w, vnni.data(), M, 0, 13, Int8Kernel::Vnni);
        nbitsInt8Rows(paired, w, loops.data(), M, 0, 13, Int8Kernel::Loops);
        nbitsInt8Rows(plain, w, ref.data(), M, 0, 13, Int8Kernel::Loops);
        for (int64_t i = 0; i < M * 13; ++i) {
          EXPECT_EQ(loops[i], ref[i]) << "K " << K << " at " << i; // the same integers, summed alike
          EXPECT_NEAR(vnni[i], ref[i], 1e-5f * (1.f + std::fabs(ref[i]))) << "K " << K << " at " << i;
        }
      }
    }
}

// The vector kernels (VNNI, AVX2's vpmaddubsw / vpmaddwd, each where this
// CPU has it) sum the same integers a block as the plain loops, so their
// results differ only by the blocks' float sums' rounding: 4 and 8 bits,
// blocks of 32 and 64, every zero-point kind, 1 to 8 rows, odd and even
// block counts, fewer and more than 8 blocks.
TEST(MatmulNBits, Int8VectorKernelsSumTheLoopsIntegers) {
  std::vector<Int8Kernel> kernels;
  if (cpuHasAvx2())
    kernels.push_back(Int8Kernel::Avx2);
  if (cpuHasVnni())
    kernels.push_back(Int8Kernel::Vnni);
  if (kernels.empty())
    GTEST_SKIP() << "no AVX2 + FMA here";
  std::mt19937 rng(4806);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t bits : {4, 8})
    for (int64_t bs : {32, 64})
      for (int64_t K : {200, 600, 610}) // fewer and more than 8 blocks (one row takes 8 a round), odd and even
        for (ZeroPointKind zp : {ZeroPointKind::Default, ZeroPointKind::Packed, ZeroPointKind::Float}) {
          const Case c = makeCase(rng, {bits, bs, K, 11}, zp);
          NBitsMatrix w = c.matrix();
          w.accuracyLevel = 4;
          for (int64_t M : {1, 2, 5, 8}) {
            std::vector<float> a(M * K);
            for (float &x : a)
              x = u(rng) * (u(rng) > 0.9f ? 20.f : 1.f);
            Int8Rows plain;
            quantizeNBitsRows(w.shape, a.data(), M, plain, Int8Kernel::Loops);
            std::vector<float> ref(M * 11, NAN);
            nbitsInt8Rows(plain, w, ref.data(), M, 0, 11, Int8Kernel::Loops);
            float scale = 1.f; // the sums cancel: their rounding is the largest result's
            for (float r : ref)
              scale = std::max(scale, std::fabs(r));
            for (Int8Kernel kernel : kernels) {
              ASSERT_EQ(int8KernelFor(w.shape, kernel), kernel);
              Int8Rows vec;
              quantizeNBitsRows(w.shape, a.data(), M, vec, kernel);
              EXPECT_EQ(vec.pairs, bits == 4 && bs == 32);
              std::vector<float> got(M * 11, NAN);
              nbitsInt8Rows(vec, w, got.data(), M, 0, 11, kernel);
              for (int64_t i = 0; i < M * 11; ++i)
                EXPECT_NEAR(got[i], ref[i], 2e-5f * scale)
                    << (kernel == Int8Kernel::Vnni ? "VNNI, " : "AVX2, ") << bits << " bits, blocks of " << bs
                    << ", K " << K << ", M " << M << " at " << i;
            }
          }
        }
}

// quantizeNBitsRows (vectorised where the CPU has AVX2) gives each block
// exactly what the definition says: sx = max |x| / 127, q = x * (127 / max |x|)
// rounded to nearest even, their sum; a zero block zeros, a block with an
// infinity or a NaN a NaN scale. 8-bit rows keep x's order, so q[k] is x[k]'s.
TEST(MatmulNBits, Int8RowsQuantizeAsDefined) {
  std::mt19937 rng(4807);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const NBitsShape s{8, 32, 200, 4};
  const int64_t M = 3, blocks = s.blocks();
  std::vector<float> a(M * s.K);
  for (float &x : a)
    x = u(rng) * (u(rng) > 0.8f ? 300.f : 1.f);
  for (int64_t k = 32; k < 64; ++k)
    a[k] = 0.f; // row 0, block 1: zeros
  a[s.K + 70] = INFINITY; // row 1, block 2
  a[2 * s.K + 5] = NAN;   // row 2, block 0
  for (int64_t k = 96; k < 128; ++k)
    a[2 * s.K + k] = (k % 4 - 1.5f) * 0.5f; // row 2, block 3: halves, |x| <= 0.75, so x * 127 / 0.75 meets ties
  for (Int8Kernel kernel : {Int8Kernel::Loops, Int8Kernel::Avx2, Int8Kernel::Vnni}) {
    Int8Rows r;
    quantizeNBitsRows(s, a.data(), M, r, kernel);
    ASSERT_EQ(r.rowBytes, blocks * 32);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < blocks; ++j) {
        float amax = 0.f;
        bool finite = true;
        for (int64_t k = j * 32; k < std::min(s.K, (j + 1) * 32); ++k) {
          finite = finite && std::isfinite(a[m * s.K + k]);
          amax = std::max(amax, std::fabs(a[m * s.K + k]));
        }
        const float sx = r.scale[size_t(m * blocks + j)];
        if (!finite) {
          EXPECT_TRUE(std::isnan(sx)) << m << " " << j;
          continue;
        }
        EXPECT_EQ(sx, amax / 127.f) << m << " " << j;
        int32_t sum = 0;
        for (int64_t k = j * 32; k < (j + 1) * 32; ++k) {
          const float x = k < s.K ? a[m * s.K + k] : 0.f;
          const long want = amax == 0.f ? 0 : std::lrint(x * (127.f / amax));
          sum += static_cast<int32_t>(want);
          ASSERT_EQ(r.q[size_t(m * r.rowBytes + k)], want) << "row " << m << " element " << k;
        }
        EXPECT_EQ(r.sum[size_t(m * blocks + j)], sum) << m << " " << j;
      }
  }
}

// A non-finite activation makes its rows' results NaN, as f32 activations do.
TEST(MatmulNBits, Int8ActivationsPropagateANonFiniteRow) {
  std::mt19937 rng(4804);
  const Case c = makeCase(rng, {8, 32, 64, 5}, ZeroPointKind::Default);
  NBitsMatrix w = c.matrix();
  w.accuracyLevel = 4;
  std::vector<float> a(2 * 64, 0.5f);
  a[64 + 40] = INFINITY;
  std::vector<float> y(2 * 5, 0.f);
  matmulNBits(a.data(), w, y.data(), 2, nullptr);
  for (int64_t n = 0; n < 5; ++n) {
    EXPECT_TRUE(std::isfinite(y[n])) << n;
    EXPECT_TRUE(std::isnan(y[5 + n])) << n;
  }
}

TEST(MatmulNBits, RefusesAKernelThisCpuLacksAndUnknownNames) {
  EXPECT_FALSE(forceNBitsKernel("avx1024"));
  EXPECT_TRUE(forceNBitsKernel("scalar"));
  EXPECT_STREQ(nbitsKernelName(), "scalar");
  EXPECT_TRUE(forceNBitsKernel(""));
}

} // namespace
