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
//   attn_N_attend    grid (T, KVH, S), block 128: split s of token t's keys for
//       the GROUP = H / KVH query heads of KV head kh (one read of K/V serves
//       the group): an online softmax, written as partial outputs `partial`
//       [T, H, S, D] (f32, normalised) and their log-sum-exp `lse` [T, H, S].
//       S is gridDim.z: each token splits its own key range evenly over
//       min(S, ceil(keys / 64)) splits, so the launch does not depend on the
//       sequences' lengths (CUDA graphs); the splits past those mark their
//       rows empty (lse = -inf) and return.
//   attn_N_combine   grid (T, H), block 128: the log-sum-exp weighted sum of the
//       S partials into `out` ([T, H·D] merged heads, or [H, T, D]); for
//       self-attention also appends each token's k, v to its slot's cache
//       rows (after every split has read the cache: stream order).
//
// The struct is spelled once, in GENC_ATTN_ABI below, which both declares it
// here and is pasted as text into the generated CUDA source.
#pragma once

#define GENC_ATTN_STR(...) #__VA_ARGS__
#define GENC_ATTN_XSTR(...) GENC_ATTN_STR(__VA_ARGS__) // expands the macro first

// clang-format off
#define GENC_ATTN_ABI                                                                              \
  /* Where one packed token belongs (the Session's TokenPlace, plus the */                         \
  /* cross entry and the @encode segment). runEnd: one past the last */                            \
  /* position its slot takes in this run (a rolling cache row that a */                            \
  /* later token of the run also maps to is that token's to write). */                             \
  struct GencTokenPlace {                                                                          \
    long long position, cachedBefore, segStart, segLen, runEnd;                                    \
    int slot, entry;                                                                               \
  };                                                                                               \
  /* Rows of one token per prologue block: about 256 elements, 2 a thread. */                     \
  constexpr int gencAttnPrologueRows(long long d) { return d >= 256 ? 1 : (int)(256 / d); }       \
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
    unsigned long long out;                                                                        \
    long long tokens;                    /* T */                                                   \
    long long width;                     /* W: the packed projection's row */                      \
    long long capacity;                  /* cache rows per slot and head */                        \
    long long positionsInTable;          /* P: rows of the RoPE tables */                          \
    long long splits;                    /* S: splits of each token's keys */                      \
    float scale;                                                                                   \
  };
// clang-format on

namespace genrt::cuda {
GENC_ATTN_ABI
static const char *const kGencAttnAbiSource = GENC_ATTN_XSTR(GENC_ATTN_ABI);

constexpr int kAttnThreads = 128;

} // namespace genrt::cuda
