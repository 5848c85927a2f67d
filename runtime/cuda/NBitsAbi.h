// The contract between the 4/8-bit weight kernels genc generates into a plan
// (codegen/NBitsKernels.h) and the CUDA executor that launches them
// (runtime/cuda/NBitsSteps.cpp), for `matmul_nbits(a, b, scales
// [, zero_points]) {bits, block_size, n}` (runtime/plan/NBitsLayout.h):
//
//   y[M, N] = a[M, K] . W     W[k, n] = (q[n, k] - z[n, blk]) * s[n, blk]
//
// The weights are read as the plan stores them — codes u8 [N, blocks, blob],
// scales [N, blocks] (f32 / f16 / bf16), zero points absent (2^(bits-1)),
// u8 [N, ceil(blocks * bits / 8)] packed like the codes, or [N, blocks] in the
// scales' dtype — and widened in registers; every sum is f32, in a fixed
// order (a run's output does not depend on the launch).
//
// Each matmul_nbits names its family in the attribute `gpu_gemv`
// ("gemvq_N"); a family is one (a storage, scale storage, zero point form,
// y storage, bits, block_size):
//
//   gemvq_N_m{1,2,4,8}  M <= 1, 2, 4, 8 rows (decode); the m8 entry takes up
//       to kNBitsGemvChunkRows rows in chunks of 8. Grid (ceil(N / 8),
//       ceil(M / 8) for m8, else 1), block 256: block (x, y) runs columns
//       8x .. 8x + 7 for rows 8y .. 8y + 7, one warp per output column n,
//       streaming column n's codes
//       (one contiguous run of blocks * blob bytes) once in 16-byte words
//       (8-byte words where blob is 8: 4-bit blocks of 16), each word whole
//       codes of one block; a lane widens a word's codes, subtracts the
//       block's zero point, multiplies by its scale, and dots them with the
//       M rows of a; a warp-shuffle reduction, then y[m, n] in y's storage.
//   gemvq_N_after_<body>_<r>, gemvq_N_then_<glu>, gemvq_N_after_<body>_<r>_then_<glu>
//       the one-row entries that also run the fused row body before the
//       product and/or the elementwise GLU after it, as the float GEMVs'
//       entries of those names do (GemvAbi.h: second parameter a
//       GencGemvPrologue, the body's dynamic shared memory, grid
//       ceil(N / 8) or ceil(N / 16) with the GLU: a warp reads columns n and
//       N / 2 + n and writes the body's element n to p.y).
//   gemvq_N_mma{1,2,4}  up to 16, 32, 64 rows on tensor cores (from 4 rows: the GEMV takes 1 to 3), in families
//       whose a is f16 or bf16, blocks of 32 codes or more and no float zero
//       points (the op carries gpu_gemv_mma = 1). Grid (S ceil(N / 64)),
//       block 256 (8 warps): block x runs columns 64 (x / S) .. + 63 over
//       part x % S of K (S = split: GemvAbi.h's gemvMmaSplit for 64
//       columns a group), warp w its 8 columns 64 (x / S) + 8w .., every
//       round of 32 k of the part in order, a's rows of 4 rounds at a time
//       in shared memory. A round: lane (g, q) widens codes 32r + 8q .. + 7
//       of its column g to (q - z) in a's type (exact), two mma.m16n8k16
//       against the same k of each 16-row tile of a, the block's scales
//       times that partial in f32. Where S > 1 the parts ([groups, S, MR,
//       256] f32x4 in `parts`) are added in part order by the last block of
//       a group (a u32 ticket a group in `tickets`, left at zero).
//   gemvq_N_mma_tiles  any M (prefill), in the same families. Grid
//       (ceil(N / 64), ceil(M / 64)), block 256: a 64 x 64 tile of y a block,
//       warp w its columns 8w .. 8w + 7 over all of K and all 64 rows (four
//       16-row tiles); each round of 32 k the block puts a's 64 rows of the
//       round in shared memory first (16 bytes a thread), then each warp
//       widens and multiplies as gemvq_N_mma does.
//   gemvq_N_tiles  any M (prefill). Grid (ceil(N / 64), ceil(M / 64)),
//       block 256: a 64 x 64 tile of y a block, K in chunks of 32: the chunk
//       of a and the chunk of W (dequantized) in shared memory as f32, each
//       thread 4 x 4 outputs.
// Needs: a, y, codes, scales and zero points at their buffers' starts (any
// alignment of a: a lane loads a whole word of a only where a row starts at a
// multiple of 16 bytes).
#pragma once
#include <cstdint>

#define GENC_NBITS_STR(...) #__VA_ARGS__
#define GENC_NBITS_XSTR(...) GENC_NBITS_STR(__VA_ARGS__)

// clang-format off
#define GENC_NBITS_ABI                                                                             \
  struct GencNBitsParams {                                                                         \
    unsigned long long a, codes, scales, zp, y; /* a [M, K], y [M, N]; zp 0: none */               \
    long long M, K, N;                                                                             \
    unsigned long long parts, tickets; /* the tensor-core entries' K split: f32, u32 zero */      \
    long long split;                  /* blocks splitting K (those entries; 0 or 1: none) */       \
  };
// clang-format on

namespace genrt::cuda {
GENC_NBITS_ABI
static const char *const kGencNBitsAbiSource = GENC_NBITS_XSTR(GENC_NBITS_ABI);

constexpr int kNBitsThreads = 256; // both kernels
constexpr int kNBitsGemvRows = 8;  // the GEMV entries' rows a block
/// M up to this runs the m8 entry in chunks of 8 rows (each block reads its
/// columns' codes; the chunks of a column meet in L2), above it the tiles
/// (decode batches stay on the GEMV; the threshold is not tuned on a GPU yet).
constexpr int kNBitsGemvChunkRows = 32;
constexpr int kNBitsTile = 64;     // rows and columns of y a tiles block
/// The tensor-core entries take up to this many rows (GENC_CUDA_NBITS_ROWS
/// lowers it), the tiled kernel more.
constexpr int kNBitsMmaRows = 64;
constexpr int kNBitsMmaColumns = 64; // columns a tensor-core block (or the blocks splitting K) takes
/// A block's part of the sums where blocks split K: 64 rows x 64 f32 columns.
constexpr int64_t kNBitsMmaPartBytes = int64_t(kNBitsMmaRows) * kNBitsMmaColumns * 4;

} // namespace genrt::cuda
