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
//   gemv_N_after_<body>_<r>  the one-row entry for a matmul that alone
//       reads result r of the fused row kernel <body> just before it: each
//       block first runs that body's row itself (`<body>_rows`; dynamic
//       shared memory = the body's), result r into shared memory as the
//       matmul's a, the body's other results written by block 0; the
//       executor then skips the body's own launch. Second parameter: a
//       GencGemvPrologue with the body's symbols and pointers in its
//       kernel's order.
//   gemv_N[_after_<body>_<r>]_then_<glu>  the one-row entry for a matmul
//       whose result y [2h] only the elementwise body <glu> right after it
//       reads, as act(y[:h]) * y[h:] or the like: a warp reads weight rows
//       n and h + n and writes the body's element n to p.y (the body's
//       result; y is not written), N = 2h weight rows, grid ceil(h / 8).
//       The executor then skips the body's own launch.
//   <entry>_mma16, <entry>_mmaw{16,32,64}  for gemv_N and gemv_N_then_<glu>
//       where a and w are both f16 or both bf16: up to 16 (32, 64) rows on
//       tensor cores (mma.m16n8k16, f32 sums), block 256, K a multiple of
//       32, S blocks splitting K (gemvMmaSplit, by the shape). _mma16:
//       grid (S ceil(N / 32)), a block's warps split K (a GLU: N / 32
//       blocks as well, 16 outputs a block); _mmaw: grid (S ceil(N / 64)),
//       a's rows in shared memory, a block's warps split its 64 weight
//       rows (codegen/GemvMma.cpp). A row's sums never meet another row's:
//       its y does not depend on the launch's other rows. The executor
//       takes _mma16 for 2 to 16 rows (GENC_CUDA_GEMV_MMA: up to 64 with
//       _mmaw32, _mmaw64; GENC_CUDA_GEMV_MMA_WIDE=2: _mmaw16 at 2-16 too),
//       cuBLASLt beyond.
//   genc_transpose_{2,4}  grid (ceil(cols / 32), ceil(rows / 32)), block
//       (32, 8): src [rows, cols] -> dst [cols, rows] for 2- or 4-byte
//       elements. The executor turns [K, N] weights that only matmuls read
//       into [N, K] with it once, at load (cuBLASLt then reads them with
//       transpose_b).
// Needs: K a multiple of the 16-byte word of a and of the weight, and a, w
// 16-byte aligned; the executor checks and otherwise keeps cuBLASLt.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#define GENC_GEMV_STR(...) #__VA_ARGS__
#define GENC_GEMV_XSTR(...) GENC_GEMV_STR(__VA_ARGS__)

// clang-format off
#define GENC_GEMV_ABI                                                                              \
  struct GencGemvParams {                                                                          \
    unsigned long long a, w, bias, y; /* a [M, K], w [N, K], bias [N], y [M, N] */                 \
    long long M, K, N;                                                                             \
    unsigned long long parts, tickets; /* the tensor-core entries' K split: f32, u32 zero */      \
    long long split;                  /* blocks splitting K (those entries; 0 or 1: none) */       \
  };                                                                                               \
  struct GencGemvPrologue {          /* the fused row kernel's symbols, then its pointers */     \
    long long sym[4];                                                                              \
    unsigned long long ptr[12];       /* arguments then results */                                 \
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
constexpr size_t kGemvPrologueSymbols = 4, kGemvProloguePointers = 12;
constexpr int64_t kGemvPrologueBytes = 32 * 1024; // the row of a, in shared memory
constexpr int64_t kGemvSharedLimit = 48 * 1024;   // static + dynamic, without opting in

constexpr int kGemvMmaRows = 64;   // the tensor-core entries' most rows
/// The most rows the executor gives them by default: on an H100 (the 1.1B's
/// 22 layers, 2026-12-07) they beat cuBLASLt by 1-1.5% at 2-8 rows, tied it
/// at 16 and lost 8% at 32 (docs/decode-experiments.md).
constexpr int64_t kGemvMmaRowsDefault = 16;
constexpr int kGemvMmaOutputs = 32; // weight rows a block (or the blocks splitting K) of them takes
constexpr int kGemvMmaWideOutputs = 64; // the same of the _mmaw entries
constexpr int kGemvMmaMaxSplit = 4;  // blocks splitting K at most
/// A block's part of the sums where blocks split K: 64 rows x 32 f32 columns.
constexpr int64_t kGemvMmaPartBytes = int64_t(kGemvMmaRows) * kGemvMmaOutputs * 4;
constexpr int64_t kGemvMmaWidePartBytes = int64_t(kGemvMmaRows) * kGemvMmaWideOutputs * 4;

/// The blocks that split K in a tensor-core GEMV of N weight rows (a GLU's
/// gate and up together) and depth K on `sms` SMs — the shape's, never the
/// rows': a row's sums must not depend on the batch. As many as fill the
/// SMs at one block each (the entries take 158-206 registers a thread),
/// leaving every warp at least 2 rounds of 32 k; `forced` (1 to 4,
/// GENC_CUDA_GEMV_MMA_SPLIT: A/B runs and checks) for every product.
/// (The 4/8-bit entries take groups of 64 columns: `columns`.)
inline int gemvMmaSplit(int64_t N, int64_t K, int sms, int forced, int64_t columns = kGemvMmaOutputs) {
  if (forced >= 1 && forced <= kGemvMmaMaxSplit)
    return forced;
  const int64_t groups = (N + columns - 1) / columns;
  int64_t s = groups > 0 ? sms / groups : 1;
  s = s < 1 ? 1 : s > kGemvMmaMaxSplit ? kGemvMmaMaxSplit : s;
  while (s > 1 && K / 32 < 16 * s)
    --s;
  return static_cast<int>(s);
}

/// The tensor-core entry of `entry` (a family, or its GLU entry) for up to
/// `rows` rows (16: 32 weight rows a block, warps splitting K).
inline std::string gemvMmaName(const std::string &entry, int rows) { return entry + "_mma" + std::to_string(rows); }
/// The tensor-core entry of 64 weight rows a block (_mmaw) for up to `rows`.
inline std::string gemvMmaWideName(const std::string &entry, int rows) {
  return entry + "_mmaw" + std::to_string(rows);
}

/// The one-row GEMV of family `family` that first runs fused row body
/// `before`'s row and reads its result `result`, and/or ends in the
/// elementwise GLU body `then` (codegen/GemvKernels.cpp); "" for neither.
inline std::string gemvEntryName(const std::string &family, const std::string &before, size_t result,
                                 const std::string &then) {
  std::string n = family;
  if (!before.empty())
    n += "_after_" + before + "_" + std::to_string(result);
  if (!then.empty())
    n += "_then_" + then;
  return n;
}

} // namespace genrt::cuda
