// The contract between the matrix-vector kernels genc generates into a plan
// (codegen/GemvKernels.h) and the CUDA executor that launches them.
//
// A decode step multiplies a few rows of activations by every weight matrix:
// M = the batch's tokens, often 1. cuBLASLt's GEMMs reach about a third of
// the copy bandwidth there, so each matmul of a plan also names a GEMV
// family in its attribute `gpu_gemv` ("gemv_N"), for M <= 8:
//
//   gemv_N_m{1,2,4,8}  grid (ceil(N / 8)), block 256: one warp per output
//       column n reads weight row n ([N, K], K contiguous) once in 16-byte
//       words and multiplies it with the M <= m rows of a [M, K]; f32 sums,
//       a warp-shuffle reduction in a fixed order (deterministic), then the
//       epilogue (bias, relu or tanh-GELU) and y[M, N] in its storage type.
//   genc_transpose_{2,4}  grid (ceil(cols / 32), ceil(rows / 32)), block
//       (32, 8): src [rows, cols] -> dst [cols, rows] for 2- or 4-byte
//       elements. The executor turns [K, N] weights that only matmuls read
//       into [N, K] with it once, at load (cuBLASLt then reads them with
//       transpose_b).
// Needs: K a multiple of the 16-byte word of a and of the weight, and a, w
// 16-byte aligned; the executor checks and otherwise keeps cuBLASLt.
#pragma once

#define GENC_GEMV_STR(...) #__VA_ARGS__
#define GENC_GEMV_XSTR(...) GENC_GEMV_STR(__VA_ARGS__)

// clang-format off
#define GENC_GEMV_ABI                                                                              \
  struct GencGemvParams {                                                                          \
    unsigned long long a, w, bias, y; /* a [M, K], w [N, K], bias [N], y [M, N] */                 \
    long long M, K, N;                                                                             \
  };                                                                                               \
  struct GencTransposeParams {                                                                     \
    unsigned long long src, dst;                                                                   \
    long long rows, cols;             /* of src */                                                 \
  };
// clang-format on

namespace genrt::cuda {
GENC_GEMV_ABI
static const char *const kGencGemvAbiSource = GENC_GEMV_XSTR(GENC_GEMV_ABI);

constexpr int kGemvThreads = 256;  // 8 warps: 8 output columns per block
constexpr int kGemvMaxRows = 8;    // M above this goes to cuBLASLt

} // namespace genrt::cuda
