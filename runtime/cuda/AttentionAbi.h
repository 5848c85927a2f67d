// The contract between the attention kernels genc generates into a plan
// (codegen/AttentionKernels.h) and the CUDA executor that launches them.
//
// Every attention op of a plan names its kernel family in the attribute
// `gpu_kernel` ("attn_N"); the family has three entry points, each taking one
// GencAttnParams by value:
//
//   attn_N_prologue  grid (T, ceil((H + 2·KVH) / RB)), block 128, RB =
//       gencAttnPrologueRows(D): reads q (and k, v) of each token from the
//       packed projection X[T, W] (or head-major q, k, v), applies the q/k
//       RMSNorm and RoPE, writes them in f32 to `scratch` [T, H + 2·KVH, D];
//       block (t, y) does rows [y·RB, y·RB + RB) of token t.
//   attn_N_attend    grid (T, KVH·PARTS, S), block 128: split s of token t's
//       keys for GROUP query heads of KV head kh (one read of K/V serves the
//       group; a GQA group above 8 heads is split over PARTS blocks). Each
//       token splits its own key range evenly over min(S, ceil(keys / 64))
//       splits, so the launch does not depend on the sequences' lengths
//       (CUDA graphs); the blocks past those return at once. One split
//       writes the output itself; several write partial outputs `partial`
//       [T, H, S, D] (f32, normalised) and their log-sum-exp `lse` [T, H, S],
//       and the last of them to finish (a ticket per (t, y) in `tickets`,
//       zero between launches) merges them in split order into `out` ([T,
//       H·D] merged heads, or [H, T, D]). With `append` set, that block also
//       appends the token's k, v to its slot's cache rows (self-attention).
//   attn_N_append    grid (T, KVH), block 128: the appends, for runs where a
//       token's write could overwrite a rolling-window row that another
//       token of the run still reads (the executor leaves `append` clear
//       then and launches this after the attend).
//
//   attn_N_prefill   grid (tiles, H), block 128, prefillSharedBytes(D) of
//       dynamic shared memory; only in families over 16-bit caches with head
//       dims in steps of 16 up to 128 (`PMMA` in the config): a run of many
//       tokens on tensor cores (FlashAttention-2's loop). Tile x is the
//       `tiles` entry (t0, n): tokens t0 .. t0 + n - 1, n <= 64, all of one
//       slot (one cross entry, one @encode segment); it writes their
//       output rows for query head y after the prologue. Self-attention
//       keys all come from the cache: the executor sets `append` 2 so the
//       prologue writes the run's k, v there first, and takes this kernel
//       only where no two tokens of a run share a cache row (no rolling
//       window shorter than the plan) and the cache is not sharded.
//
// Shared prompts (genc --max-new-tokens with beams; self-attention families
// whose config has SHARED 1): with `pairs` set, key j of slot s lives in the
// row its pair (region, index) = pairs[s · pairStride + j] names, and a
// token's own k, v go to (writeRegion, writeIndex) of its place; the run's
// new positions are in the pairs too (the executor stages them). With
// `pairs` 0 the same kernels index each slot's own rows, as other families.
//
// Tree attention (self-attention, --gpus N): the cache is sharded by
// position (runtime/kv/KvLayout.h: position p on shard p % N, row p / N);
// `shards`, `shard` say which this GPU holds, and every kernel reads, masks
// and appends only its own rows. With `lseOut` set, the kernels also write
// the log-sum-exp of each (token, head)'s output over its keys here (-inf:
// none here). Two more entry points (kv_attention families only), grid
// (T, H), block 128, combine the GPUs' outputs around the collectives, by
// `combine`:
//   0, all-reduce (the paper's): attn_N_weigh writes `packed` [T, H, D + 1]
//       = [w · out | w], w = exp(lseOut - lseMax), lseMax the all-reduced
//       max of lseOut; after the sum over GPUs attn_N_finish writes out =
//       packed[.., :D] / packed[.., D];
//   1, all-gather: attn_N_weigh writes [out | lseOut] into this GPU's part
//       of `packed` [N, T, H, D + 1]; after the gather attn_N_finish
//       combines the N parts itself (max, weights, weighted sum).
//
// The struct is spelled once, in GENC_ATTN_ABI below, which both declares it
// here and is pasted as text into the generated CUDA source.
#pragma once
#include <cstdint>

#define GENC_ATTN_STR(...) #__VA_ARGS__
#define GENC_ATTN_XSTR(...) GENC_ATTN_STR(__VA_ARGS__) // expands the macro first

// clang-format off
#define GENC_ATTN_ABI                                                                              \
  /* Where one packed token belongs (runtime/Executor.h's TokenPlace, */                           \
  /* plus the cross entry and the @encode segment). runEnd: one past */                            \
  /* the last position its slot takes in this run (a rolling cache row */                          \
  /* that a later token of the run also maps to is that token's to */                              \
  /* write). writeRegion, writeIndex: where its k, v go when beams */                              \
  /* share their prompt (runtime/kv/KvRows.h; with `pairs` set). */                                   \
  struct GencTokenPlace {                                                                          \
    long long position, cachedBefore, segStart, segLen, runEnd;                                    \
    int slot, entry;                                                                               \
    int writeRegion, writeIndex;                                                                   \
  };                                                                                               \
  /* Rows of one token per prologue block: about 256 elements, 2 a thread. */                     \
  constexpr int gencAttnPrologueRows(long long d) { return d >= 256 ? 1 : (int)(256 / d); }       \
  /* A TMA tensor map (CUtensorMap: 128 opaque bytes, 64-aligned). */                             \
  struct alignas(64) GencTensorMap {                                                               \
    unsigned long long words[16];                                                                  \
  };                                                                                               \
  struct GencAttnParams {                                                                          \
    unsigned long long x, k, v;          /* packed X, or head-major q, k, v */                     \
    unsigned long long positions;        /* i64 [T] (RoPE) */                                      \
    unsigned long long cosTable, sinTable; /* [P, R] */                                            \
    unsigned long long qNorm, kNorm;     /* RMSNorm weights */                                     \
    unsigned long long bias;             /* relative bias [H, 2M-1] */                             \
    unsigned long long places;           /* GencTokenPlace [T] */                                  \
    unsigned long long crossLengths;     /* i64 [entries] */                                       \
    unsigned long long cacheK, cacheV;   /* this layer's K and V */                                \
    unsigned long long scratch;          /* f32 [T, H + 2 KVH, D] */                               \
    unsigned long long partial, lse;     /* f32 [T, H, S, D], [T, H, S] */                         \
    unsigned long long tickets;          /* u32 [T, gridDim.y], zero */                            \
    unsigned long long out;                                                                        \
    long long tokens;                    /* T */                                                   \
    long long width;                     /* W: the packed projection's row */                      \
    long long capacity;                  /* cache rows per slot and head */                        \
    long long positionsInTable;          /* P: rows of the RoPE tables */                          \
    long long splits;                    /* S: splits of each token's keys */                      \
    long long append;                    /* 1: attend appends this run's k, v */                   \
    float scale;                                                                                   \
    long long shards, shard;             /* tree attention: N, this GPU's r (1, 0: all) */        \
    unsigned long long lseOut;           /* f32 [T, H] or 0 */                                      \
    unsigned long long lseMax;           /* f32 [T, H]: the max over GPUs */                        \
    unsigned long long packed;           /* f32 [(N,) T, H, D + 1] */                               \
    long long combine;                   /* 0: two all-reduces, 1: one all-gather */                \
    unsigned long long tiles;            /* i32 [*, 2]: attn_N_prefill's (t0, n) */                 \
    /* attn_N_merge, before its wait (the decode kernel's latency chain */                        \
    /* leaves HBM idle): [pf[i], pf[i] + pfBytes[i]) into L2, the next */                          \
    /* GEMVs' weights. */                                                                          \
    unsigned long long pf[3];                                                                      \
    long long pfBytes[3];                                                                          \
    /* Shared prompts (runtime/kv/KvLayout.h; 0: each slot its own rows): */                         \
    /* int2 [slots, pairStride], (region, index) of each slot's */                                 \
    /* positions; `homes` regions of `capacity` rows, then one of */                               \
    /* `branchCapacity` rows a slot. */                                                            \
    unsigned long long pairs;                                                                      \
    long long pairStride, homes, branchCapacity;                                                   \
    /* attn_N_stream (sm_90): this layer's K and V cache rows as 2-D */                            \
    /* maps of [rows][D] 16-bit elements, boxes of 64 rows x 64 dims, */                          \
    /* 128-byte swizzle. */                                                                        \
    GencTensorMap kMap, vMap;                                                                      \
  };
// clang-format on

namespace genrt::cuda {
GENC_ATTN_ABI
static const char *const kGencAttnAbiSource = GENC_ATTN_XSTR(GENC_ATTN_ABI);

constexpr int kAttnThreads = 128;
/// attn_N_merge's threads: 16 groups summing a D-128 row's splits, so that a
/// thread's loads of a 64k step's 65 splits go out at once.
constexpr int kMergeThreads = 512;
/// attn_N_merge_rows takes runs of at most this many splits (its MRS).
constexpr int kMergeRowsSplits = 8;

/// The decode kernel's shape (codegen/AttentionDecode.cpp), which genc
/// compiles it for and the executor sizes its launch by: the query heads of
/// a block (the whole GQA group, halved while above 8), whether it runs on
/// tensor cores (16-bit caches, head dims in steps of 16: `mma` 1 f16, 2
/// bf16), keys per tile (tensor cores 64; else 32 a warp, warps going over
/// keys where the group has fewer than 4 heads), the tile stages (about 72
/// KB: 3 blocks an SM on Hopper) and their dynamic shared bytes. `heads` 0:
/// no decode kernel (a packed @encode, head dims above 256, cache rows that
/// are not whole 16-byte words, a group that does not halve to 8 or fewer
/// heads).
struct DecodeShape {
  int heads = 0, mma = 0, keysPerTile = 0, stages = 0;
  /// K and V streamed from global memory into the mma fragments (16-byte
  /// loads, no shared-memory tiles, no barrier a tile): shared memory then
  /// holds only the query rows and the warps' final sums.
  bool registers = false;
  long long sharedBytes = 0;
};

/// attn_N_stream, the decode kernel of long contexts on sm_90
/// (codegen/AttentionStream.cpp): K/V tiles of 64 keys by TMA into a ring of
/// kStreamRingBytes of shared memory, a producer warp ahead of four compute
/// warps (160 threads, one block an SM). Where genc compiles it: the tile
/// kernel's tensor-core shape over 16-bit caches of head dim 64 or 128
/// (whole 128-byte boxes), rows found by index (no shared prompts, no
/// rolling window), no i8 codes, no q/k norm over all heads (its block sum
/// takes every thread).
constexpr int kStreamThreads = 160;
/// The keys a sequence holds (the cache's capacity) from which decode steps
/// take it by default (GENC_CUDA_STREAM=0 / 1 overrides).
constexpr long long kStreamMinKeys = 4096;
constexpr long long kStreamRingBytes = 196608;
constexpr bool streamEligible(const DecodeShape &s, int mode, long long D, bool shared, bool i8, long long window,
                              int qkNorm) {
  return s.heads > 0 && s.heads <= 8 && s.mma != 0 && (D == 64 || D == 128) && mode != 2 && !shared && !i8 &&
         window == 0 && qkNorm != 2;
}
/// Its dynamic shared bytes: 1 KB to align the ring, the ring, the group's
/// query rows (f32).
constexpr long long streamSharedBytes(long long groupHeads, long long D) {
  return 1024 + kStreamRingBytes + groupHeads * D * 4;
}

/// Whether a decode kernel may stream K/V into registers: tensor cores and
/// head dims 64 or 128, where a thread's 16-byte words map whole onto its
/// fragments (K: 4 words of one key; V: one word of 4 keys, 8 dims) and
/// the output's D / 8 accumulator tiles fit the registers.
constexpr bool decodeRegistersEligible(int mma, long long D) { return mma != 0 && (D == 64 || D == 128); }

/// attn_N_prefill's tokens a tile and its dynamic shared bytes: two stages
/// of K and V tiles of 64 keys, rows padded by one 16-byte word.
constexpr int kPrefillTokensPerTile = 64;
constexpr long long prefillSharedBytes(long long D) { return 2 * 2 * 64 * (D * 2 / 16 + 1) * 16; }
/// attn_N_prefill's tiles of a run of T tokens: the runs of consecutive
/// tokens with the same groupOf(t) (their slot; an @encode segment's start)
/// cut into pieces of at most kPrefillTokensPerTile, as (first token, count)
/// pairs into `out` (room for T pairs); returns how many.
template <typename GroupOf>
inline int64_t prefillTiles(int64_t T, GroupOf groupOf, int32_t *out) {
  int64_t tiles = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (t == 0 || groupOf(t) != groupOf(t - 1) || out[2 * tiles - 1] == kPrefillTokensPerTile) {
      out[2 * tiles] = static_cast<int32_t>(t);
      out[2 * tiles + 1] = 0;
      ++tiles;
    }
    ++out[2 * tiles - 1];
  }
  return tiles;
}

/// Whether a family over caches of `elementBytes` has attn_N_prefill.
constexpr bool prefillEligible(long long D, int elementBytes) {
  return elementBytes == 2 && D > 0 && D % 16 == 0 && D <= 128;
}

/// `stageBudget`: the tile stages' shared bytes aimed at (genc's choice,
/// recorded in the plan as the op's `gpu_decode_stages`).
constexpr long long kDecodeStageBudget = 73728;
/// `codes`: an i8 cross cache (elementBytes 1) whose plan computes in 16
/// bits, 1 f16 or 2 bf16 (0: f32). Its codes then stream into registers and
/// take the tensor cores as exact 16-bit integers, where registers are asked
/// for and the head dim allows; elsewhere the CUDA-core kernel reads them.
inline DecodeShape decodeShape(int mode, long long groupAll, long long D, int elementBytes, bool bf16,
                               long long stageBudget = kDecodeStageBudget, bool registers = false, int codes = 0) {
  DecodeShape s;
  if (mode == 2 || D <= 0 || D > 256 || elementBytes <= 0 || (D * elementBytes) % 16)
    return s;
  long long g = groupAll;
  while (g > 8 && g % 2 == 0)
    g /= 2;
  if (g < 1 || g > 8)
    return s;
  if (mode == 1 && elementBytes == 1 && (codes == 1 || codes == 2) && registers && decodeRegistersEligible(codes, D)) {
    s.mma = codes;
    s.keysPerTile = 64;
    s.stages = 2;
    s.heads = static_cast<int>(g);
    s.registers = true;
    s.sharedBytes = (4 * 8 * D + g * D) * 4;
    return s;
  }
  const long long hw = g < 4 ? g : 4, rowBytes = (D * elementBytes / 16 + 1) * 16;
  s.mma = elementBytes == 2 && D % 16 == 0 && D <= 256 ? (bf16 ? 2 : 1) : 0;
  s.keysPerTile = s.mma ? 64 : static_cast<int>(32 * (4 / hw));
  const long long stageBytes = 2 * s.keysPerTile * rowBytes, fit = stageBudget / stageBytes;
  s.stages = static_cast<int>(fit < 2 ? 2 : fit > 4 ? 4 : fit);
  // The CUDA-core kernel sums its 128 / (D / 2) key subsets' outputs in the
  // tiles' memory: too small (one-byte rows of a short head dim, a group of
  // 8), no decode kernel.
  const long long keySubsets = 128 / (D / 2 > 0 ? D / 2 : 1);
  if (!s.mma && s.stages * stageBytes < (keySubsets + 1) * g * D * 4)
    return DecodeShape{};
  s.sharedBytes = s.stages * stageBytes;
  s.heads = static_cast<int>(g);
  if (registers && decodeRegistersEligible(s.mma, D)) {
    s.registers = true;
    s.sharedBytes = (4 * 8 * D + g * D) * 4; // the warps' O rows, then the group's sums (the queries before)
  }
  return s;
}

} // namespace genrt::cuda
