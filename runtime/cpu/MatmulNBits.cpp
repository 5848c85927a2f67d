#include "runtime/cpu/MatmulNBits.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/MatmulNBitsInt8.h"
#include "runtime/cpu/MatmulNBitsRows.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <vector>

namespace genrt::cpu {
namespace {

void forPieces(ThreadPool *pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (pool)
    pool->parallelFor(n, grain, fn);
  else
    fn(0, n);
}

// The plain loops, for CPUs without AVX2 + FMA and as the tests' second
// opinion: each column dequantized once into `col`, then one sum per row.
void rowsScalar(const float *a, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1) {
  const int64_t K = w.shape.K, N = w.shape.N;
  static thread_local std::vector<float> col;
  col.resize(static_cast<size_t>(K));
  for (int64_t n = n0; n < n1; ++n) {
    dequantizeNBits(w, n, n + 1, col.data());
    for (int64_t m = 0; m < M; ++m) {
      const float *x = a + m * K;
      float s = 0.f;
      for (int64_t k = 0; k < K; ++k)
        s += x[k] * col[k];
      y[m * N + n] = s;
    }
  }
}

enum class Kind { Scalar, Avx2, Avx512 };

Kind bestKind() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return Kind::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return Kind::Avx2;
  return Kind::Scalar;
}

const Kind kBest = bestKind();
std::atomic<Kind> gKind{kBest};

constexpr int64_t kMaxGemvRows = 8;

} // namespace

void dequantizeNBits(const NBitsMatrix &w, int64_t n0, int64_t n1, float *out) {
  const NBitsShape &s = w.shape;
  const int64_t K = s.K, blocks = s.blocks(), blob = s.blobBytes(), zpBytes = s.zeroPointBytes();
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t *codes = w.codes + n * blocks * blob;
    float *o = out + (n - n0) * K;
    for (int64_t j = 0; j < blocks; ++j) {
      const float sc = w.scales[n * blocks + j];
      const float z = w.zeroPoints == ZeroPointKind::Float    ? w.zpFloat[n * blocks + j]
                      : w.zeroPoints == ZeroPointKind::Packed ? static_cast<float>(
                                                                    nbitsPackedZeroPoint(w.zpPacked + n * zpBytes, j, s.bits))
                                                              : static_cast<float>(s.defaultZeroPoint());
      const int64_t k0 = j * s.blockSize, kn = std::min(s.blockSize, K - k0);
      const uint8_t *b = codes + j * blob;
      for (int64_t i = 0; i < kn; ++i)
        o[k0 + i] = (static_cast<float>(nbitsCode(b, i, s.bits)) - z) * sc;
    }
  }
}

const char *nbitsKernelName() {
  switch (gKind.load()) {
  case Kind::Avx512: return "avx512";
  case Kind::Avx2: return "avx2";
  case Kind::Scalar: return "scalar";
  }
  return "scalar";
}

bool forceNBitsKernel(const char *name) {
  const std::string n = name ? name : "";
  Kind k = kBest;
  if (n == "scalar")
    k = Kind::Scalar;
  else if (n == "avx2")
    k = Kind::Avx2;
  else if (n == "avx512")
    k = Kind::Avx512;
  else if (!n.empty())
    return false;
  if (static_cast<int>(k) > static_cast<int>(kBest))
    return false;
  gKind = k;
  return true;
}

void matmulNBits(const float *a, const NBitsMatrix &w, float *y, int64_t M, ThreadPool *pool) {
  const int64_t K = w.shape.K, N = w.shape.N;
  if (M == 0 || N == 0)
    return;
  if (w.accuracyLevel == 4) {
    // 8-bit activations: the same integers whichever kernel, rows 8 at a time.
    const Kind kind = gKind.load();
    const Int8Kernel kernel = int8KernelFor(w.shape, kind == Kind::Scalar ? Int8Kernel::Loops
                                                     : kind == Kind::Avx2 ? Int8Kernel::Avx2
                                                                          : Int8Kernel::Vnni);
    static thread_local Int8Rows mine;
    const Int8Rows &xq = mine; // this thread's, named so that the pool's threads read it
    for (int64_t m0 = 0; m0 < M; m0 += kMaxGemvRows) {
      const int64_t rows = std::min(kMaxGemvRows, M - m0);
      quantizeNBitsRows(w.shape, a + m0 * K, rows, mine, kernel);
      forPieces(pool, N, 16, [&](int64_t n0, int64_t n1) { nbitsInt8Rows(xq, w, y + m0 * N, rows, n0, n1, kernel); });
    }
    return;
  }
  if (M <= kMaxGemvRows) {
    const Kind kind = gKind.load();
    // 4-bit blocks of 16 are 8 bytes: no whole vector of one block's codes.
    if (kind == Kind::Scalar || (w.shape.bits == 4 && w.shape.blockSize < 32)) {
      forPieces(pool, N, 16, [&](int64_t n0, int64_t n1) { rowsScalar(a, w, y, M, n0, n1); });
      return;
    }
    // The rows in the kernels' order (MatmulNBitsRows.h), once for all columns.
    static thread_local std::vector<float> xs;
    xs.resize(static_cast<size_t>(nbitsRowFloats(w.shape) * M));
    for (int64_t m = 0; m < M; ++m)
      arrangeNBitsRow(w.shape, a + m * K, xs.data() + m * nbitsRowFloats(w.shape));
    const float *x = xs.data();
    forPieces(pool, N, 16, [&](int64_t n0, int64_t n1) {
      if (kind == Kind::Avx512)
        nbitsRowsAvx512(x, w, y, M, n0, n1);
      else
        nbitsRowsAvx2(x, w, y, M, n0, n1);
    });
    return;
  }
  // Many rows: compute-bound. Each thread takes whole panels of columns,
  // dequantizes each into a buffer that stays in cache (a whole f32 copy
  // would be written to memory and read back) and runs it through sgemm
  // (b read as [nb, K]): one hand-out of work a product, not one a panel.
  constexpr int64_t NB = 256;
  const int64_t panels = (N + NB - 1) / NB;
  const bool simd = gKind.load() == Kind::Avx512 && (w.shape.bits == 8 || w.shape.blockSize >= 32);
  forPieces(pool, panels, 1, [&](int64_t p0, int64_t p1) {
    static thread_local std::vector<float> panel, out;
    panel.resize(static_cast<size_t>(NB * K));
    out.resize(static_cast<size_t>(M * NB));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * NB, nb = std::min(NB, N - n0);
      (simd ? nbitsDequantAvx512 : dequantizeNBits)(w, n0, n0 + nb, panel.data());
      matmul(a, panel.data(), out.data(), M, nb, K, /*transB=*/true, nullptr);
      for (int64_t m = 0; m < M; ++m)
        std::memcpy(y + m * N + n0, out.data() + m * nb, static_cast<size_t>(nb) * sizeof(float));
    }
  });
}

} // namespace genrt::cpu
