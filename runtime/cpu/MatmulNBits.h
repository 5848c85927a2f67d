// Matrix products against 4-bit and 8-bit block-quantized weights on the
// CPU (`matmul_nbits`, runtime/plan/NBitsLayout.h): the codes stay packed in
// memory, so a decode step streams an eighth (4 bits) or a quarter (8 bits)
// of an f32 plan's weight bytes, plus the scales.
//
//   y[M, N] = a[M, K] · W     W[k, n] = (q[n, k] - z[n, blk]) · s[n, blk]
//
// Arithmetic (what the interpreter, the executor and the GPU kernels share):
// y is the f32 sum over k of a[m, k] · W[k, n], W dequantized as
// NBitsLayout.h says ((q - z) in f32, one f32 product with s), in an order
// and association the kernel chooses: the plain loops and the 4-bit
// kernels multiply by each dequantized weight, the 8-bit AVX-512 kernel
// sums (q - z) · a over a block and multiplies the sum by s. So y equals
// the dequantized matrix's product to the f32 rounding of a sum, not to the
// bit; the tests compare every kernel against a double-precision sum.
//
// Rows 8 at a time (a decode step's, a prompt's in groups): each column's
// blocks are read once for a group's rows and widened in registers (AVX-512
// or AVX2 with FMA, chosen at run time; plain loops elsewhere), columns
// split over the thread pool. A row's sum runs in one order whatever rows
// share the product, so its bits do not depend on its batch.
#pragma once
#include "runtime/plan/NBitsLayout.h"

#include <cstdint>

namespace genrt::cpu {

class ThreadPool;

/// A quantized W as the kernels read it: codes and zero points as stored,
/// scales (and float zero points) widened to f32.
struct NBitsMatrix {
  NBitsShape shape;
  const uint8_t *codes = nullptr;    // [N, blocks, blob]
  const float *scales = nullptr;     // [N, blocks]
  ZeroPointKind zeroPoints = ZeroPointKind::Default;
  const uint8_t *zpPacked = nullptr; // [N, zeroPointBytes] when Packed
  const float *zpFloat = nullptr;    // [N, blocks] when Float
  int accuracyLevel = 0;             // 4: rows of a quantized to int8 (MatmulNBitsInt8.h)
};

/// y[M, N] = a[M, K] · W. `pool` may be null (everything on this thread).
/// With accuracyLevel 4, every row of a (prefill's too) goes through int8.
void matmulNBits(const float *a, const NBitsMatrix &w, float *y, int64_t M, ThreadPool *pool);

/// Columns [n0, n1) of W dequantized, column-major: out[(n - n0) * K + k] = W[k, n].
void dequantizeNBits(const NBitsMatrix &w, int64_t n0, int64_t n1, float *out);

/// The decode kernels this CPU runs: "avx512", "avx2" or "scalar".
const char *nbitsKernelName();
/// Tests: run the decode rows with `name` ("avx512", "avx2", "scalar") from
/// now on; false (nothing changed) when this CPU cannot. "" restores the default.
bool forceNBitsKernel(const char *name);

} // namespace genrt::cpu
