#include "runtime/cpu/MatmulNBits.h"

#include "runtime/cpu/MatmulNBitsInt8.h"
#include "runtime/cpu/MatmulNBitsRows.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
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

namespace {

// Up to 8 rows with 8-bit activations: the same integers whichever kernel.
void int8Group(const float *a, const NBitsMatrix &w, float *y, int64_t rows, ThreadPool *pool, Kind kind) {
  const Int8Kernel kernel = int8KernelFor(w.shape, kind == Kind::Scalar ? Int8Kernel::Loops
                                                   : kind == Kind::Avx2 ? Int8Kernel::Avx2
                                                                        : Int8Kernel::Vnni);
  static thread_local Int8Rows mine;
  const Int8Rows &xq = mine; // this thread's, named so that the pool's threads read it
  quantizeNBitsRows(w.shape, a, rows, mine, kernel);
  forPieces(pool, w.shape.N, 16, [&](int64_t n0, int64_t n1) { nbitsInt8Rows(xq, w, y, rows, n0, n1, kernel); });
}

// Up to 8 rows with f32 activations, widened codes in registers.
void floatGroup(const float *a, const NBitsMatrix &w, float *y, int64_t rows, ThreadPool *pool, Kind kind) {
  // 4-bit blocks of 16 are 8 bytes: no whole vector of one block's codes.
  if (kind == Kind::Scalar || (w.shape.bits == 4 && w.shape.blockSize < 32)) {
    forPieces(pool, w.shape.N, 16, [&](int64_t n0, int64_t n1) { rowsScalar(a, w, y, rows, n0, n1); });
    return;
  }
  // The rows in the kernels' order (MatmulNBitsRows.h), once for all columns.
  static thread_local std::vector<float> xs;
  const int64_t rowFloats = nbitsRowFloats(w.shape);
  xs.resize(static_cast<size_t>(rowFloats * rows));
  for (int64_t m = 0; m < rows; ++m)
    arrangeNBitsRow(w.shape, a + m * w.shape.K, xs.data() + m * rowFloats);
  const float *x = xs.data();
  forPieces(pool, w.shape.N, 16, [&](int64_t n0, int64_t n1) {
    if (kind == Kind::Avx512)
      nbitsRowsAvx512(x, w, y, rows, n0, n1);
    else
      nbitsRowsAvx2(x, w, y, rows, n0, n1);
  });
}

} // namespace

void matmulNBits(const float *a, const NBitsMatrix &w, float *y, int64_t M, ThreadPool *pool) {
  const int64_t K = w.shape.K, N = w.shape.N;
  if (M == 0 || N == 0)
    return;
  // Rows 8 at a time through the row kernels, whatever M: a row's numbers
  // are the same bits whatever rows share its product, so a served request
  // gets its batch-mode tokens (docs/serving.md). A prompt reads the codes
  // once a group of 8 rows (dequantized panels through sgemm, before
  // 2026-12-04, rounded a row otherwise than the decode rows).
  const Kind kind = gKind.load();
  for (int64_t m0 = 0; m0 < M; m0 += kMaxGemvRows) {
    const int64_t rows = std::min(kMaxGemvRows, M - m0);
    (w.accuracyLevel == 4 ? int8Group : floatGroup)(a + m0 * K, w, y + m0 * N, rows, pool, kind);
  }
}

} // namespace genrt::cpu
