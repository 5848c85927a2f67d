// Decode rows of matmul_nbits with 8-bit activations (accuracy_level 4, as
// ONNX Runtime's MatMulNBits and llama.cpp's Q8 dot products): each row of a
// is quantized per weight block, symmetric, to int8 with one f32 scale,
//
//   sx[m, j] = max |a[m, block j]| / 127    xq = round(a / sx) in [-127, 127]
//   y[m, n]  = sum_j s[n, j] * sx[m, j] * sum_k (q[n, k] - z[n, j]) * xq[m, k]
//
// so the inner sums are exact integers (AVX-512 VNNI's vpdpbusd, AVX2's
// vpmaddubsw / vpmaddwd (MatmulNBitsInt8Avx2.cpp), or plain loops), and only the blocks' products and their sum round. The numbers
// differ from the f32 activations' (accuracy_level 0) by the quantization of
// a; a plan asks for them (`genc --nbits-accuracy-level 4`, or the ONNX
// model's attribute).
#pragma once
#include "runtime/cpu/MatmulNBits.h"

#include <cstdint>
#include <vector>

namespace genrt::cpu {

/// Which integer kernel sums the products: the plain loops (any CPU, any
/// block size; the tests' reference), AVX2's vpmaddubsw / vpmaddwd, or
/// AVX-512 VNNI's vpdpbusd. Asked for, then narrowed to what this CPU and
/// the matrix allow (int8KernelFor).
enum class Int8Kernel { Loops, Avx2, Vnni };

/// What runs when `wanted` is asked for W: VNNI on a CPU with it, else AVX2
/// on a CPU with it, for blocks a multiple of 32; else the loops.
Int8Kernel int8KernelFor(const NBitsShape &s, Int8Kernel wanted);

/// Rows of a quantized for a matrix's blocks: q [M][blocks * blockSize]
/// (arranged as arrangeNBitsRow arranges floats: 4-bit groups of 32 as their
/// 16 even elements then the 16 odd, but in order for 4-bit blocks of 16;
/// zeros past K), scale [M][blocks] (sx),
/// sum [M][blocks] (the integer sum of the block's q).
struct Int8Rows {
  int64_t rowBytes = 0, blocks = 0;
  /// 4-bit blocks of 32 for the vector kernels: each whole pair of blocks
  /// (2p, 2p + 1) held as [2p's 16 even elements, 2p + 1's even, 2p's odd,
  /// 2p + 1's odd], so that 32 code bytes (two blocks) meet x in two
  /// 32-byte loads.
  bool pairs = false;
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> sum;
};

/// a [M, K] -> rows, laid out for `kernel` (int8KernelFor's answer for W).
/// A block holding a non-finite element gets a NaN scale (its products are
/// NaN, as the f32 path's would be).
void quantizeNBitsRows(const NBitsShape &s, const float *a, int64_t M, Int8Rows &rows, Int8Kernel kernel);

/// y[m, n] for m < M (<= 8), n in [n0, n1), summed by `kernel` (int8KernelFor's
/// answer for W; x quantized for the same kernel, or for the loops, which
/// read either layout).
void nbitsInt8Rows(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1,
                   Int8Kernel kernel);

/// Whether this CPU has AVX-512 VNNI (with VL and BW); AVX2 with FMA.
bool cpuHasVnni();
bool cpuHasAvx2();

/// The AVX2 kernels (MatmulNBitsInt8Avx2.cpp): blocks a multiple of 32.
void nbitsInt8RowsAvx2(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1);

} // namespace genrt::cpu
