// The decode attention kernel (Flash-Decoding): one query row per token
// against its cache, K/V tiles staged in shared memory by cp.async several
// tiles ahead so each SM keeps tens of KB of cache reads in flight. Pasted
// after attentionTemplates() (it reuses their range, output and place
// helpers); codegen/AttentionKernels.cpp writes the DGROUP / DSTAGES / DKT
// constants it reads and emits its entry only where decodeEligible().
#include "codegen/AttentionKernels.h"

namespace genc {

std::string attentionTraceSource(bool trace) {
  return trace ? R"(// ---- attention_trace: stage stamps of block (0, 0) ----
__device__ unsigned long long genc_attn_trace[10][16];
static __device__ __forceinline__ void genc_attn_mark(int row, int i) {
  if (threadIdx.x || blockIdx.x || blockIdx.y || row < 0 || row > 9) return;
  unsigned long long g;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
  genc_attn_trace[row][i] = g;
  genc_attn_trace[row][8 + i] = clock64();
}
)"
               : "static __device__ __forceinline__ void genc_attn_mark(int, int) {}\n";
}

const char *attentionDecodeTemplates() {
  return R"(// ---- genc decode attention ----------------------------------------------
// Where a block is in its grid: the hardware's (t, head part, split, splits),
// or a step-kernel item's (codegen/StepKernel.cpp) through another policy.
struct GencHwBlock {
  static __device__ __forceinline__ unsigned x() { return blockIdx.x; }
  static __device__ __forceinline__ unsigned y() { return blockIdx.y; }
  static __device__ __forceinline__ unsigned z() { return blockIdx.z; }
  static __device__ __forceinline__ unsigned nz() { return gridDim.z; }
  static __device__ __forceinline__ unsigned splits(const GencAttnParams &p) { return (unsigned)p.splits; }
  // the barrier of the 128 threads that run a decode routine (the step
  // kernel's policy meets its first four warps alone where it has more)
  static __device__ __forceinline__ void sync() { __syncthreads(); }
  // the barrier of a merge's MTHREADS (the step kernel's compute warps,
  // without its copy warp)
  static __device__ __forceinline__ void msync() { __syncthreads(); }
};
// Which keys block (t, y, s) takes: whole tiles of KT keys, at least
// C::DMINT a split, and only as many splits as have tiles (every block of a
// token, and the merge, computes the same `used`); and where its cache rows
// start. A short context then takes one split: each split's item is a chain
// of dependent loads (its q, its tiles, its partial's store) that a tile
// more hardly lengthens, and a single split writes the output itself, so
// the merge after it returns at once.
template <typename C, int KT>
struct GencDecodeRange {
  long long a, b, used, rowBase;
  int tiles, slot, kh; // slot, kh: shared prompts' pairs (genc_self_row)
  __device__ GencDecodeRange(const GencAttnParams &p, const GencTokenPlace &pl, int kh, int split, int S) {
    long long lo, hi;
    genc_attn_range<C>(p, pl, lo, hi);
    const long long n = hi - lo > 0 ? hi - lo : 0, tilesAll = (n + KT - 1) / KT;
    long long perSplit = (tilesAll + S - 1) / S > 0 ? (tilesAll + S - 1) / S : 1;
    if (perSplit < C::DMINT) perSplit = C::DMINT;
    used = tilesAll > 0 ? (tilesAll + perSplit - 1) / perSplit : 1;
    a = lo + split * perSplit * KT;
    b = a + perSplit * KT < hi ? a + perSplit * KT : hi;
    tiles = split < used ? (int)((b - a + KT - 1) / KT) : 0;
    rowBase = ((long long)(C::MODE == 0 ? pl.slot : pl.entry) * C::KVH + kh) * p.capacity;
    slot = pl.slot;
    this->kh = kh;
  }
  // The cache row of key j.
  __device__ __forceinline__ long long row(const GencAttnParams &p, long long j) const {
    // Lanes past the range still compute an address (their loads are
    // masked): keep their pair read inside the slot's row.
    if (C::MODE == 0 && C::SHARED && p.pairs) return genc_self_row<C>(p, slot, kh, j < p.pairStride ? j : p.pairStride - 1);
    return rowBase + (C::MODE == 0 && j >= p.capacity ? j % p.capacity : j);
  }
};

// Tile i's K and V rows [KT][RW] words into stage i % ST (row stride RW + 1
// words: lanes reading rows in parallel meet distinct banks); rows past the
// range are zero-filled (a zero V row times a zero weight stays zero).
template <typename C, int KT, int ST, typename B>
static __device__ __forceinline__ void genc_decode_issue(const GencAttnParams &p, const GencDecodeRange<C, KT> &r,
                                                         uint4 *tiles, int i) {
  typedef typename C::Cache::S CS;
  constexpr int D = C::D, RW = D * (int)sizeof(CS) / 16, RS = RW + 1, EW = 16 / (int)sizeof(CS);
  const long long j0 = r.a + (long long)i * KT;
  const int nt = (int)(r.b - j0 < KT ? r.b - j0 : KT);
  uint4 *kt = tiles + (i % ST) * 2 * KT * RS, *vt = kt + KT * RS;
  // Shared prompts: a key's row is a pair read from memory. Each thread
  // reads at most one of the tile's pairs, all at once, into shared memory
  // (two tiles' worth: a tile's readers are done before the barrier of the
  // tile after it), rather than one dependent read in front of each copy.
  __shared__ long long pairRows[C::SHARED ? 2 : 1][C::SHARED ? KT : 1];
  if constexpr (C::SHARED) {
    for (int x = threadIdx.x; x < KT; x += 128) pairRows[i & 1][x] = r.row(p, j0 + (x < nt ? x : 0));
    B::sync();
  }
  for (int e = threadIdx.x; e < 2 * KT * RW; e += 128) {
    const int which = e / (KT * RW), row = (e / RW) % KT, c = e % RW;
    const long long j = j0 + (row < nt ? row : 0);
    const long long at = C::SHARED ? pairRows[i & 1][row] : r.row(p, j);
    const CS *src = (const CS *)(which ? p.cacheV : p.cacheK) + at * D + c * EW;
    const unsigned dst = (unsigned)__cvta_generic_to_shared((which ? vt : kt) + row * RS + c);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(row < nt ? 16 : 0));
  }
}

// The pipeline: tiles 0 .. ST - 2 in flight before the loop; at tile i,
// tile i + ST - 1 goes out and tile i is waited for (this thread's copies,
// then everyone's). A group is committed every time, empty or not, so the
// count the wait names stays right at the range's end.
template <typename C, int KT, int ST, typename B>
static __device__ __forceinline__ void genc_decode_fill(const GencAttnParams &p, const GencDecodeRange<C, KT> &r,
                                                        uint4 *tiles) {
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < r.tiles) genc_decode_issue<C, KT, ST, B>(p, r, tiles, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
}
template <typename C, int KT, int ST, typename B>
static __device__ __forceinline__ void genc_decode_next(const GencAttnParams &p, const GencDecodeRange<C, KT> &r,
                                                        uint4 *tiles, int i) {
  if (i + ST - 1 < r.tiles) genc_decode_issue<C, KT, ST, B>(p, r, tiles, i + ST - 1);
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 1));
  B::sync();
}

// A decode step's own k, v (append == 2): every block whose split holds the
// token's position computes them and writes them to the cache before any of
// its tiles is read — each part of a KV head's group too (a group above 8
// heads is split over parts that read the row as well; they write the same
// bits, so no part reads it before it is there). No other split reads that
// row. Block-uniform: every thread calls it.
template <typename C, int KT>
static __device__ __forceinline__ bool genc_decode_append(const GencAttnParams &p, long long t,
                                                          const GencTokenPlace &pl, const GencDecodeRange<C, KT> &r,
                                                          int kh) {
  const long long own = genc_shard_row<C>(p, pl.position);
  if (genc_attn_appends_now<C>(p, pl) && own >= r.a && own < r.b) {
    genc_attn_rows<C>(p, t, C::H + kh, C::H + kh + 1, nullptr, true, pl);
    genc_attn_rows<C>(p, t, C::H + C::KVH + kh, C::H + C::KVH + kh + 1, nullptr, true, pl);
    return true;
  }
  return false;
}

// Query head hb + h's output for this split: o[h][d] / l[h] (unnormalised
// sums o [G][D] in shared memory, running max m and sum l per head). One
// split writes the output; several write partials [T, H, S, D] and their
// log-sum-exp for genc_attn_merge.
template <typename C, int G, typename B = GencHwBlock>
static __device__ void genc_decode_finish(const GencAttnParams &p, long long t, int hb, int split, long long used,
                                          const float *o, const float *m, const float *l) {
  typedef typename C::Out O;
  constexpr int D = C::D;
  const int tid = threadIdx.x, S = B::nz();
  for (int e = tid; e < G * D; e += 128) {
    const int h = e / D, d = e % D;
    const float v = l[h] > 0.f ? o[e] / l[h] : 0.f;
    if (used == 1) ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, hb + h, d)] = O::st(v);
    else ((float *)p.partial)[((t * C::H + hb + h) * (long long)S + split) * D + d] = v;
  }
  if (tid < G && (used > 1 || p.lseOut))
    ((float *)(used > 1 ? p.lse : p.lseOut))[(t * C::H + hb + tid) * (long long)(used > 1 ? S : 1) + (used > 1 ? split : 0)] =
        l[tid] > 0.f ? m[tid] + logf(l[tid]) : -__int_as_float(0x7f800000);
}

// ---- f32 caches: CUDA cores ------------------------------------------------
// Block (t, y, s), 128 threads: token t's single query row; KV head
// kh = y / DPARTS and its query heads [hb, hb + DGROUP); split s of the
// token's keys. Per tile of DKT keys: (A) lane j of a warp dots key j with
// its heads' queries (warps over heads, and over keys where the group has
// fewer than 4 heads); (B) a warp per head turns the scores into weights
// against its running max; (C) each thread adds the weighted V rows of DPT
// dims for its subset of the tile's keys.
template <typename C, typename B = GencHwBlock>
static __device__ void genc_attn_decode_fma(const GencAttnParams &p) {
  typedef typename C::Cache CT;
  typedef typename CT::S CS;
  constexpr int D = C::D, G = C::DGROUP, ST = C::DSTAGES, KT = C::DKT;
  constexpr int RW = D * (int)sizeof(CS) / 16, RS = RW + 1, EW = 16 / (int)sizeof(CS);
  constexpr int HW = G < 4 ? G : 4;          // (A): warps across heads
  constexpr int KW = KT / 32;                // (A): warps across keys
  constexpr int HPW = (G + HW - 1) / HW;     // (A): heads per warp
  constexpr int DPT = 2;                     // (C): dims per thread
  constexpr int NDG = D / DPT;               // (C): threads across a row
  constexpr int KS = 128 / NDG;              // (C): key subsets
  constexpr int DPARTS = C::GROUP_ALL / G;
  static_assert(HW * KW <= 4 && KS >= 1, "decode attention: 4 warps");
  static_assert(ST * 2 * KT * RS * 4 >= (KS + 1) * G * D, "decode attention: the tiles' memory holds the final sums");
  extern __shared__ uint4 genc_attn_tiles[]; // [ST][K, V][KT][RS]
  __shared__ __align__(16) float qS[G][D];
  __shared__ float scS[G][KT];
  __shared__ __align__(16) float pS[KT][G];
  __shared__ float mS[G], lS[G], cS[G];
  constexpr bool I8 = C::CROSS_I8 && C::MODE == 1; // an i8 cross cache: codes times their row's scale
  __shared__ float vsS[I8 ? KT : 1];              // the tile's V scales, for (C)
  const long long t = B::x();
  const int kh = B::y() / DPARTS, hb = kh * C::GROUP_ALL + (B::y() % DPARTS) * G;
  const int split = B::z(), tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  const GencDecodeRange<C, KT> r(p, pl, kh, split, B::nz());
  if (split >= r.used) return;
  genc_decode_append<C, KT>(p, t, pl, r, kh);
  genc_decode_fill<C, KT, ST, B>(p, r, genc_attn_tiles);
  genc_attn_query_rows<C, G>(p, t, hb, &qS[0][0], pl); // the group's queries, while the tiles load
  if (tid < G) { mS[tid] = -__int_as_float(0x7f800000); lS[tid] = 0.f; }
  float acc[G][DPT];
#pragma unroll
  for (int h = 0; h < G; ++h)
#pragma unroll
    for (int i = 0; i < DPT; ++i) acc[h][i] = 0.f;
  const int hw = warp % HW, kw = warp / HW; // (A)
  const int ks = tid / NDG, dg = tid % NDG; // (C)

  for (int i = 0; i < r.tiles; ++i) {
    genc_decode_next<C, KT, ST, B>(p, r, genc_attn_tiles, i);
    const long long j0 = r.a + (long long)i * KT;
    const int nt = (int)(r.b - j0 < KT ? r.b - j0 : KT);
    const uint4 *kt = genc_attn_tiles + (i % ST) * 2 * KT * RS, *vt = kt + KT * RS;
    // (A) scores
    if (kw < KW) {
      const int jj = kw * 32 + lane;
      float s[HPW];
#pragma unroll
      for (int x = 0; x < HPW; ++x) s[x] = 0.f;
      float kscale = 1.f;
      if (I8 && hw == 0) vsS[jj] = jj < nt ? genc_cross_scales<C>(p, 1)[r.row(p, j0 + jj)] : 0.f;
      if (I8 && jj < nt) kscale = genc_cross_scales<C>(p, 0)[r.row(p, j0 + jj)];
      if (jj < nt) {
#pragma unroll 4
        for (int c = 0; c < RW; ++c) {
          const uint4 w = kt[jj * RS + c];
          const CS *ke = (const CS *)&w;
          float kf[EW];
#pragma unroll
          for (int e = 0; e < EW; ++e) kf[e] = I8 ? CT::ld(ke[e]) * kscale : CT::ld(ke[e]);
#pragma unroll
          for (int x = 0; x < HPW; ++x) {
            const int h = hw + x * HW;
            if (h < G)
#pragma unroll
              for (int e = 0; e < EW; ++e) s[x] += qS[h][c * EW + e] * kf[e];
          }
        }
      }
#pragma unroll
      for (int x = 0; x < HPW; ++x) {
        const int h = hw + x * HW;
        if (h >= G) continue;
        float v = s[x] * p.scale;
        if (C::BIAS) v += genc_attn_bias<C>(p, pl, t, hb + h, j0 + jj);
        scS[h][jj] = jj < nt ? v : -__int_as_float(0x7f800000);
      }
    }
    B::sync();
    // (B) weights, a warp per head
    for (int h = warp; h < G; h += 4) {
      float mt = -__int_as_float(0x7f800000);
      for (int jj = lane; jj < nt; jj += 32) mt = fmaxf(mt, scS[h][jj]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
      const float mOld = mS[h], mNew = fmaxf(mOld, mt);
      float ls = 0.f;
      for (int jj = lane; jj < KT; jj += 32) {
        const float e = jj < nt && mNew != -__int_as_float(0x7f800000) ? expf(scS[h][jj] - mNew) : 0.f;
        pS[jj][h] = e;
        ls += e;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) ls += __shfl_xor_sync(0xffffffffu, ls, o);
      __syncwarp(); // every lane has read mS[h] before lane 0 writes it
      if (lane == 0) {
        const float c = mOld == -__int_as_float(0x7f800000) ? 0.f : expf(mOld - mNew);
        cS[h] = c;
        lS[h] = lS[h] * c + ls;
        mS[h] = mNew;
      }
    }
    B::sync();
    // (C) weighted V rows
    if (ks < KS) {
#pragma unroll
      for (int h = 0; h < G; ++h) {
        const float c = cS[h];
#pragma unroll
        for (int x = 0; x < DPT; ++x) acc[h][x] *= c;
      }
      for (int jj = ks; jj < nt; jj += KS) {
        float vf[DPT];
        genc_attn_load<CT, DPT>(vf, (const CS *)(vt + jj * RS) + dg * DPT);
        if (I8)
#pragma unroll
          for (int x = 0; x < DPT; ++x) vf[x] *= vsS[jj];
#pragma unroll
        for (int h = 0; h < G; ++h) {
          const float w = pS[jj][h];
#pragma unroll
          for (int x = 0; x < DPT; ++x) acc[h][x] += w * vf[x];
        }
      }
    }
    B::sync(); // the stage and the weights are free again
  }

  // The key subsets' sums meet in the tiles' memory (no copy is in flight):
  // [KS][G][D], then their total [G][D] after them.
  float *red = (float *)genc_attn_tiles, *o = red + KS * G * D;
  if (ks < KS)
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
      for (int x = 0; x < DPT; ++x) red[(ks * G + h) * D + dg * DPT + x] = acc[h][x];
  B::sync();
  for (int e = tid; e < G * D; e += 128) {
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < KS; ++k) sum += red[k * G * D + e];
    o[e] = sum;
  }
  B::sync();
  genc_decode_finish<C, G, B>(p, t, hb, split, r.used, o, mS, lS);
}

// ---- f16 / bf16 caches: tensor cores ---------------------------------------
// mma.m16n8k16, f32 accumulators. Rows are the group's query heads (at most
// 8: rows 8..15 stay zero), so lane (g = lane / 4, q = lane % 4) holds head
// g's scores and outputs at columns 2q, 2q + 1 of each 8-wide tile. A tile of
// 64 keys: warp w takes keys [16w, 16w + 16): S = Q K^T (two 8-key tiles
// over D / 16 steps, K fragments by ldmatrix), its own online softmax (row
// max over the four lanes of a head), P (the S accumulators repacked as
// 16-bit A fragments, FlashAttention-2's trick) times V (ldmatrix.trans),
// 8 dims a tile. The four warps' (max, sum, O) meet once at the end.
template <int BF16>
static __device__ __forceinline__ void genc_mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if (BF16)
    genc_mma<genc_bf16>::run(d, a[0], a[1], a[2], a[3], b0, b1);
  else
    genc_mma<genc_f16>::run(d, a[0], a[1], a[2], a[3], b0, b1);
}

// ---- decode from registers (C::DREG) -------------------------------------
// No tiles: each warp loads its 16 keys of a 64-key tile straight into the
// mma operands with 16-byte loads, so a block holds no barrier a tile and
// little shared memory (more blocks an SM; the copies of many warps in
// flight). Dims and keys are permuted so whole words land in fragments:
//   K (B of S = Q K^T, n = key, k = dim): lane (g, q) takes key g of each
//     8-key tile, words 4jj + q (dims 32jj + 8q .. +7): k-step 2jj + x
//     reads its halves 4x .. 4x + 3 — genc_decode_kdim gives the query's
//     matching dims;
//   V (A of O^T += V^T P^T, m = dim, k = key): lane (g, q) takes keys 2q,
//     2q + 1, 2q + 8, 2q + 9 (P's fragment keys), word 8bb + g (dims 64bb +
//     8g .. +7): output tile n = 4bb + e, row r is dim genc_decode_vdim(n, r)
//     (halves 2e, 2e + 1 of the word: rows g, g + 8). Transposed, the mma's
//     16 rows are all dims where O's would be 8 heads and 8 zeros.
// Shapes: D 64 or 128; words k [2][D / 32], v [4][D / 64] (uint4).
static __device__ __forceinline__ int genc_decode_kdim(int k, int q) { return 32 * (k / 2) + 8 * q + 4 * (k % 2); }
static __device__ __forceinline__ int genc_decode_vdim(int n, int r) {
  return 64 * (n / 4) + 8 * (r % 8) + 2 * (n % 4) + r / 8;
}
static __device__ __forceinline__ unsigned genc_u4_word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
template <bool B, typename T, typename F> struct GencPick { typedef T type; };
template <typename T, typename F> struct GencPick<false, T, F> { typedef F type; };
template <int D>
struct GencDecodeWords {
  uint4 k[2][D / 32 > 0 ? D / 32 : 1], v[4][D / 64 > 0 ? D / 64 : 1];
};
// An i8 cross cache (C::CROSS_I8): the same words' eight dims as eight
// codes (8 bytes), kept raw while in flight and widened to 16-bit pairs
// where the mma takes them (genc_code_pair); each of the lane's four score
// keys (genc_decode_scales) has its K and V row scale.
template <int D>
struct GencDecodeCodes {
  uint2 k[2][D / 32 > 0 ? D / 32 : 1], v[4][D / 64 > 0 ? D / 64 : 1];
  float ks[2][2], vs[2][2];
};
// Codes 2h, 2h + 1 of w (signed bytes) as a 16-bit pair, exactly: f16 by
// the exponent trick (0x6400 | (c + 128) is 1024 + c + 128), bf16 through
// f32 (its 8 significant bits do not hold 128 + 255).
template <int BF16>
static __device__ __forceinline__ unsigned genc_code_pair(unsigned w, int h) {
  if (BF16) {
    const float a = (float)(signed char)(w >> (16 * h)), b = (float)(signed char)(w >> (16 * h + 8));
    return (unsigned)genc_f2bf(a) | ((unsigned)genc_f2bf(b) << 16);
  }
  const unsigned biased = w ^ 0x80808080u, x = __byte_perm(biased, 0x64646464u, h ? 0x4342 : 0x4140);
  unsigned r;
  asm("sub.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(0x64806480u));
  return r;
}
// The warp's keys of tile i (keys r.a + 64i + 16 warp .. +15, those past
// the range read as zeros: a zero V row times a zero weight stays zero),
// K words (genc_decode_keys) or V words (genc_decode_values), from cache
// rows as genc_decode_issue finds them: rowOf(n, u, left) gives the row of
// the lane's n-th key of the call (u of the warp's 16) and sets how many
// of the 16 are in range. L2 loads (.cg): the block's own k, v rows were
// written before a barrier.
template <typename C, int KT>
static __device__ __forceinline__ long long genc_decode_row(const GencAttnParams &p, const GencDecodeRange<C, KT> &r,
                                                            int i, int u, int &left) {
  const long long j = r.a + (long long)i * KT + (threadIdx.x >> 5) * 16;
  left = (int)(r.b - j < 16 ? r.b - j : 16);
  const long long jj = j + (u < left ? u : 0);
  return r.row(p, jj);
}
// The K (which 0) or V (which 1) row scales of the lane's four score keys
// 8n + 2q + x (the columns of its S accumulators, and the keys of its P
// fragments); 0 past the range.
template <typename C, typename RowOf>
static __device__ __forceinline__ void genc_decode_scales(const GencAttnParams &p, const RowOf &rowOf, int which,
                                                          float (&sc)[2][2]) {
  const int q = threadIdx.x & 3;
  const float *scales = genc_cross_scales<C>(p, which);
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int u = 8 * n + 2 * q + x;
      int left;
      const long long row = rowOf(n, u, left);
      sc[n][x] = u < left ? __ldcg(scales + row) : 0.f;
    }
}
// An i8 cross cache's codes: the same words' places, 8 bytes each.
template <typename C, typename RowOf>
static __device__ __forceinline__ void genc_decode_keys(const GencAttnParams &p, const RowOf &rowOf,
                                                        GencDecodeCodes<C::D> &w) {
  constexpr int D = C::D;
  const int g = (threadIdx.x & 31) >> 2, q = threadIdx.x & 3;
  const uint2 zero = make_uint2(0u, 0u);
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    int left;
    const uint2 *row = (const uint2 *)((const signed char *)p.cacheK + rowOf(n, 8 * n + g, left) * D);
#pragma unroll
    for (int jj = 0; jj < D / 32; ++jj) w.k[n][jj] = 8 * n + g < left ? __ldcg(row + 4 * jj + q) : zero;
  }
  genc_decode_scales<C>(p, rowOf, 0, w.ks);
}
template <typename C, typename RowOf>
static __device__ __forceinline__ void genc_decode_values(const GencAttnParams &p, const RowOf &rowOf,
                                                          GencDecodeCodes<C::D> &w) {
  constexpr int D = C::D;
  const int g = (threadIdx.x & 31) >> 2, q = threadIdx.x & 3;
  const uint2 zero = make_uint2(0u, 0u);
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const int u = 2 * q + (x & 1) + 8 * (x >> 1);
    int left;
    const uint2 *row = (const uint2 *)((const signed char *)p.cacheV + rowOf(x, u, left) * D);
#pragma unroll
    for (int bb = 0; bb < D / 64; ++bb) w.v[x][bb] = u < left ? __ldcg(row + 8 * bb + g) : zero;
  }
  genc_decode_scales<C>(p, rowOf, 1, w.vs);
}
template <typename C, typename RowOf>
static __device__ __forceinline__ void genc_decode_keys(const GencAttnParams &p, const RowOf &rowOf,
                                                        GencDecodeWords<C::D> &w) {
  typedef typename C::Cache::S CS;
  constexpr int D = C::D;
  const int g = (threadIdx.x & 31) >> 2, q = threadIdx.x & 3;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int n = 0; n < 2; ++n) {
    int left;
    const uint4 *row = (const uint4 *)((const CS *)p.cacheK + rowOf(n, 8 * n + g, left) * D);
#pragma unroll
    for (int jj = 0; jj < D / 32; ++jj) w.k[n][jj] = 8 * n + g < left ? __ldcg(row + 4 * jj + q) : zero;
  }
}
template <typename C, typename RowOf>
static __device__ __forceinline__ void genc_decode_values(const GencAttnParams &p, const RowOf &rowOf,
                                                          GencDecodeWords<C::D> &w) {
  typedef typename C::Cache::S CS;
  constexpr int D = C::D;
  const int g = (threadIdx.x & 31) >> 2, q = threadIdx.x & 3;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const int u = 2 * q + (x & 1) + 8 * (x >> 1);
    int left;
    const uint4 *row = (const uint4 *)((const CS *)p.cacheV + rowOf(x, u, left) * D);
#pragma unroll
    for (int bb = 0; bb < D / 64; ++bb) w.v[x][bb] = u < left ? __ldcg(row + 8 * bb + g) : zero;
  }
}
// With shared prompts each row is a pair read from memory: the kernel
// reads a tile's pairs a tile ahead of its words (in flight while a tile is
// used, not in front of every load). Lane (g, q)'s rows of tile i: its two
// keys' (genc_decode_keys' n) and four values' (genc_decode_values' x).
struct GencDecodeTileRows {
  long long k[2], v[4];
  int left;
};
template <typename C, int KT>
static __device__ __forceinline__ void genc_decode_rows(const GencAttnParams &p, const GencDecodeRange<C, KT> &r,
                                                        int i, GencDecodeTileRows &x) {
  const int g = (threadIdx.x & 31) >> 2, q = threadIdx.x & 3;
#pragma unroll
  for (int n = 0; n < 2; ++n) x.k[n] = genc_decode_row<C, KT>(p, r, i, 8 * n + g, x.left);
#pragma unroll
  for (int y = 0; y < 4; ++y) x.v[y] = genc_decode_row<C, KT>(p, r, i, 2 * q + (y & 1) + 8 * (y >> 1), x.left);
}

// The end of a tensor-core decode block: the 4 warps' running max and sum
// of each head (mW, lW) and their O rows [4][8][D] in `ow` meet into the
// block's output (used == 1) or its partial row and log-sum-exp (fS: each
// warp's factor per head). NAMED: the 128 compute threads meet on named
// barrier 1 alone (attn_N_stream, whose producer warp runs apart); else
// the block policy's barrier (B::sync).
// A tensor-core decode warp's scores of head g (s[n][x]: key k0 + 8n + 2q + x
// of the tile at j0, whose first nt keys are in range): scaled, biased,
// masked; the row max over the head's four lanes. The running max m moves
// to the new one and the running sum l takes the factor returned (0 where
// the row had no key yet), which O then takes too.
template <typename C, int G>
static __device__ __forceinline__ float genc_decode_scores(const GencAttnParams &p, const GencTokenPlace &pl,
                                                           long long t, int hb, int g, int q, int k0, long long j0,
                                                           int nt, float (&s)[2][4], float &m, float &l) {
  float mt = -__int_as_float(0x7f800000);
#pragma unroll
  for (int n = 0; n < 2; ++n)
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int jj = k0 + n * 8 + 2 * q + x;
      float v = s[n][x] * p.scale;
      if (C::BIAS && g < G) v += genc_attn_bias<C>(p, pl, t, hb + g, j0 + jj);
      s[n][x] = jj < nt ? v : -__int_as_float(0x7f800000);
      mt = fmaxf(mt, s[n][x]);
    }
  mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
  mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
  const float mNew = fmaxf(m, mt);
  const float c = m == -__int_as_float(0x7f800000) ? 0.f : expf(m - mNew);
  m = mNew;
  l *= c;
  return c;
}

template <bool NAMED, typename B>
static __device__ __forceinline__ void genc_decode_sync() {
  if constexpr (NAMED) genc_attn_sync();
  else B::sync();
}
template <typename C, int G, bool NAMED, typename B = GencHwBlock>
static __device__ __forceinline__ void genc_decode_meet(const GencAttnParams &p, long long t, int hb, int split,
                                                        long long used, const float *ow, const float (&mW)[4][8],
                                                        const float (&lW)[4][8], float (&fS)[4][8]) {
  typedef typename C::Out O;
  constexpr int D = C::D, NINF = 0xff800000;
  static_assert(D % 4 == 0, "decode meeting: a row in float4s");
  const int tid = threadIdx.x;
  genc_decode_sync<NAMED, B>();
  // One warp, lane (w, h) = 8w + h: head h's max and sum over the warps by
  // shuffles, then warp w's factor exp(m_w - M) / L, so that each output
  // is four multiply-adds. The meeting is four warps' serial code at the
  // end of every split: computed once here, not per element.
  if (tid < 32) {
    const int w = tid >> 3, h = tid & 7;
    const float mw = h < G ? mW[w][h] : __int_as_float(NINF);
    float M = fmaxf(mw, __shfl_xor_sync(0xffffffffu, mw, 8));
    M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, 16));
    const float e = mw == __int_as_float(NINF) ? 0.f : expf(mw - M);
    float L = h < G ? lW[w][h] * e : 0.f;
    L += __shfl_xor_sync(0xffffffffu, L, 8);
    L += __shfl_xor_sync(0xffffffffu, L, 16);
    fS[w][h] = L > 0.f ? e / L : 0.f;
    if (w == 0 && h < G && (used > 1 || p.lseOut))
      ((float *)(used > 1 ? p.lse : p.lseOut))[(t * C::H + hb + h) * (long long)(used > 1 ? B::nz() : 1) +
                                               (used > 1 ? split : 0)] = L > 0.f ? M + logf(L) : __int_as_float(NINF);
  }
  genc_decode_sync<NAMED, B>();
  for (int e = tid * 4; e < G * D; e += 128 * 4) {
    const int h = e / D, d = e % D;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const float4 v = *(const float4 *)(ow + (w * 8 + h) * D + d);
      const float f = fS[w][h];
      sum.x += v.x * f;
      sum.y += v.y * f;
      sum.z += v.z * f;
      sum.w += v.w * f;
    }
    if (used == 1) {
      typename O::S *out = (typename O::S *)p.out;
      out[genc_attn_out_at<C>(p, t, hb + h, d)] = O::st(sum.x);
      out[genc_attn_out_at<C>(p, t, hb + h, d + 1)] = O::st(sum.y);
      out[genc_attn_out_at<C>(p, t, hb + h, d + 2)] = O::st(sum.z);
      out[genc_attn_out_at<C>(p, t, hb + h, d + 3)] = O::st(sum.w);
    } else {
      *(float4 *)((float *)p.partial + ((t * C::H + hb + h) * (long long)B::nz() + split) * D + d) = sum;
    }
  }
}

template <typename C, typename B = GencHwBlock>
static __device__ void genc_attn_decode_mma(const GencAttnParams &p) {
  typedef typename C::Cache CT;
  typedef typename CT::S CS;
  constexpr int D = C::D, G = C::DGROUP, ST = C::DSTAGES, KT = 64, BF16 = C::DMMA == 2;
  constexpr int RW = D * 2 / 16, RS = RW + 1, RSB = RS * 16; // row stride in bytes
  constexpr int KSTEPS = D / 16, NT = D / 8;
  constexpr int DPARTS = C::GROUP_ALL / G;
  constexpr bool REG = C::DREG; // K and V straight into the fragments (genc_decode_keys, _values)
  // An i8 cross cache: codes into the fragments as exact 16-bit integers,
  // S scaled by each key's K scale, P by its V scale (registers only).
  constexpr bool I8 = C::CROSS_I8 && C::MODE == 1;
  static_assert(!I8 || REG, "decode attention (mma): one-byte codes stream into registers only");
  // Its scale reads take the lane's own keys' rows (rowOf's u), which the
  // shared-prompt rows fetched ahead do not hold; cross caches share nothing.
  static_assert(!I8 || !C::SHARED, "decode attention (mma): an i8 cache is a cross cache");
  // The mma's 16-bit operand type: the cache's, or for codes the kernel's
  // mma type (not C::X, which may be stored f32).
  typedef typename GencPick<I8, typename GencPick<BF16 != 0, genc_bf16, genc_f16>::type, CT>::type MT;
  static_assert(G <= 8 && D % 16 == 0 && KT == C::DKT, "decode attention (mma): the shape it takes");
  static_assert(REG || ST * 2 * KT * RS * 4 >= 4 * 8 * D, "decode attention (mma): the tiles' memory holds the warps' sums");
  static_assert(REG || 2 * KT * RS * 4 >= G * D, "decode attention (mma): a stage holds the group's queries");
  static_assert(!REG || D == 64 || D == 128, "decode attention (registers): a thread's words map whole onto its fragments");
  extern __shared__ uint4 genc_attn_tiles[]; // [ST][K, V][KT][RS]
  __shared__ float mW[4][8], lW[4][8], fS[4][8];
  const long long t = B::x();
  const int kh = B::y() / DPARTS, hb = kh * C::GROUP_ALL + (B::y() % DPARTS) * G;
  const int split = B::z(), tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  const GencDecodeRange<C, KT> r(p, pl, kh, split, B::nz());
  if (split >= r.used) return;
  const int mr = split < 8 ? split : -1;
  genc_attn_mark(mr, 2);
  const bool appended = genc_decode_append<C, KT>(p, t, pl, r, kh);
  genc_attn_mark(mr, 3);
  // Tile 0's words in flight while the queries are made (after the step's
  // own k, v row is in the cache: the block is uniform in `appended`); each
  // tile's words then load while the tile before is used.
  typename GencPick<I8, GencDecodeCodes<D>, GencDecodeWords<D>>::type w;
  // A tile's rows as each load is made (genc_decode_row), or with shared
  // prompts from `ahead`, tile i + 1's found while tile i is used.
  GencDecodeTileRows ahead;
  const auto keyAhead = [&](int n, int, int &left) { left = ahead.left; return ahead.k[n]; };
  const auto valueAhead = [&](int x, int, int &left) { left = ahead.left; return ahead.v[x]; };
  if constexpr (REG) {
    if (appended) B::sync();
    if (r.tiles > 0) {
      if constexpr (C::SHARED) {
        genc_decode_rows<C, KT>(p, r, 0, ahead);
        genc_decode_keys<C>(p, keyAhead, w);
        genc_decode_values<C>(p, valueAhead, w);
        if (r.tiles > 1) genc_decode_rows<C, KT>(p, r, 1, ahead);
      } else {
        const auto rowNow = [&](int, int u, int &left) { return genc_decode_row<C, KT>(p, r, 0, u, left); };
        genc_decode_keys<C>(p, rowNow, w);
        genc_decode_values<C>(p, rowNow, w);
      }
    }
  } else {
    (void)appended;
    genc_decode_fill<C, KT, ST, B>(p, r, genc_attn_tiles);
  }
  // The group's queries, while the tiles load, in the last stage's memory
  // (the fill leaves it alone; with no tiles, where the warps' sums go
  // later); head g's as A fragments (rows 8..15 and heads past the group:
  // 0), over the dims in the order the K fragments take them.
  unsigned qa[KSTEPS][2];
  {
    float *qs = (float *)(genc_attn_tiles + (REG ? 0 : (ST - 1) * 2 * KT * RS));
    genc_attn_query_rows<C, G>(p, t, hb, qs, pl);
#pragma unroll
    for (int k = 0; k < KSTEPS; ++k)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int d = REG ? genc_decode_kdim(k, q) + 2 * x : k * 16 + x * 8 + 2 * q;
        const float lo = g < G ? qs[g * D + d] : 0.f, hi = g < G ? qs[g * D + d + 1] : 0.f;
        qa[k][x] = (unsigned)MT::st(lo) | ((unsigned)MT::st(hi) << 16);
      }
    B::sync(); // the first tile to the last stage comes after every lane's read
  }
  genc_attn_mark(mr, 4);
  constexpr int NO = REG ? D / 16 : NT; // output tiles: O (8 dims) or O^T (16 dims) each
  float o[NO][4];
#pragma unroll
  for (int n = 0; n < NO; ++n)
#pragma unroll
    for (int x = 0; x < 4; ++x) o[n][x] = 0.f;
  float m = -__int_as_float(0x7f800000), l = 0.f; // head g, this warp's keys (l: this lane's part)
  const unsigned tilesAt = (unsigned)__cvta_generic_to_shared(genc_attn_tiles);

  for (int i = 0; i < r.tiles; ++i) {
    if constexpr (!REG)
      genc_decode_next<C, KT, ST, B>(p, r, genc_attn_tiles, i);
    const long long j0 = r.a + (long long)i * KT;
    const int nt = (int)(r.b - j0 < KT ? r.b - j0 : KT);
    const unsigned kt = tilesAt + (unsigned)((i % ST) * 2 * KT * RSB), vt = kt + KT * RSB;
    const int k0 = warp * 16; // this warp's keys in the tile
    if (i == 0) genc_attn_mark(mr, 5);
    // S = Q K^T: two 8-key tiles. ldmatrix.x2 (lanes 0..15 give rows):
    // matrix 0 = keys k0 + n*8 .. +7 at dims 16k .. +7, matrix 1 at +8.
    // From registers: key g's words, two k-steps a word.
    float s[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int x = 0; x < 4; ++x) s[n][x] = 0.f;
      const unsigned rowAt = kt + (unsigned)((k0 + n * 8 + (lane & 7)) * RSB + ((lane >> 3) & 1) * 16);
#pragma unroll
      for (int k = 0; k < KSTEPS; ++k) {
        unsigned b0, b1;
        if constexpr (I8) { // dims 0..3 of the word in .x, 4..7 in .y
          const unsigned c = k % 2 ? w.k[n][k / 2].y : w.k[n][k / 2].x;
          b0 = genc_code_pair<BF16>(c, 0);
          b1 = genc_code_pair<BF16>(c, 1);
        } else if constexpr (REG) {
          const uint4 &kw = w.k[n][k / 2];
          b0 = k % 2 ? kw.z : kw.x;
          b1 = k % 2 ? kw.w : kw.y;
        } else
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                       : "=r"(b0), "=r"(b1) : "r"(rowAt + k * 32));
        const unsigned a[4] = {qa[k][0], 0u, qa[k][1], 0u};
        genc_mma16816<BF16>(s[n], a, b0, b1);
      }
    }
    if constexpr (I8) // before the next tile's keys replace these scales
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int x = 0; x < 2; ++x) s[n][x] *= w.ks[n][x];
    if constexpr (REG)
      if (i + 1 < r.tiles) {
        const auto rowNow = [&](int, int u, int &left) { return genc_decode_row<C, KT>(p, r, i + 1, u, left); };
        if constexpr (C::SHARED) genc_decode_keys<C>(p, keyAhead, w);
        else genc_decode_keys<C>(p, rowNow, w);
      }
    const float c = genc_decode_scores<C, G>(p, pl, t, hb, g, q, k0, j0, nt, s, m, l), mNew = m;
    if constexpr (REG) { // O^T's columns are heads 2q, 2q + 1: their lanes' factors
      const float c0 = __shfl_sync(0xffffffffu, c, 8 * q), c1 = __shfl_sync(0xffffffffu, c, 8 * q + 4);
#pragma unroll
      for (int n = 0; n < NO; ++n) { o[n][0] *= c0; o[n][1] *= c1; o[n][2] *= c0; o[n][3] *= c1; }
    } else {
#pragma unroll
      for (int n = 0; n < NO; ++n) { o[n][0] *= c; o[n][1] *= c; }
    }
    unsigned pa[4] = {0u, 0u, 0u, 0u}; // P as the A fragment of keys k0 .. k0 + 15
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const float e0 = mNew == -__int_as_float(0x7f800000) ? 0.f : expf(s[n][0] - mNew);
      const float e1 = mNew == -__int_as_float(0x7f800000) ? 0.f : expf(s[n][1] - mNew);
      l += e0 + e1;
      // P·s·64: s = max|V row| / 127 of a 16-bit row keeps it under f16's
      // 65504, and the 64 keeps small rows' weights out of the subnormals
      // (s < 2^-14 would put them there); O gives the 64 back at the end.
      if constexpr (I8)
        pa[2 * n] = (unsigned)MT::st(e0 * w.vs[n][0] * 64.f) | ((unsigned)MT::st(e1 * w.vs[n][1] * 64.f) << 16);
      else
        pa[2 * n] = (unsigned)CT::st(e0) | ((unsigned)CT::st(e1) << 16);
    }
    // O += P V: ldmatrix.x4.trans, matrices = keys k0 .. +7 / k0 + 8 .. +15
    // at dims 16j .. +7, then the same at 16j + 8: B fragments of two tiles.
    // From registers, transposed: O^T += V^T P^T, so all 16 rows of the
    // mma are dims (rows g, g + 8 of tile n: genc_decode_vdim(n, g)), P^T's
    // B fragment is pa[0], pa[2] as it stands, and V^T's A fragment pairs
    // the halves of keys 2q, 2q + 1 (a0, a1) and 2q + 8, 2q + 9 (a2, a3).
    if constexpr (REG) {
#pragma unroll
      for (int n = 0; n < NO; ++n) {
        const int bb = n / 4, e = n % 4;
        unsigned v0, v1, v2, v3;
        if constexpr (I8) { // half-pair e of the word: codes 2e, 2e + 1
          v0 = genc_code_pair<BF16>(e < 2 ? w.v[0][bb].x : w.v[0][bb].y, e & 1);
          v1 = genc_code_pair<BF16>(e < 2 ? w.v[1][bb].x : w.v[1][bb].y, e & 1);
          v2 = genc_code_pair<BF16>(e < 2 ? w.v[2][bb].x : w.v[2][bb].y, e & 1);
          v3 = genc_code_pair<BF16>(e < 2 ? w.v[3][bb].x : w.v[3][bb].y, e & 1);
        } else {
          v0 = genc_u4_word(w.v[0][bb], e), v1 = genc_u4_word(w.v[1][bb], e), v2 = genc_u4_word(w.v[2][bb], e),
          v3 = genc_u4_word(w.v[3][bb], e);
        }
        const unsigned a[4] = {__byte_perm(v0, v1, 0x5410), __byte_perm(v0, v1, 0x7632), __byte_perm(v2, v3, 0x5410),
                               __byte_perm(v2, v3, 0x7632)};
        genc_mma16816<BF16>(o[n], a, pa[0], pa[2]);
      }
      if (i + 1 < r.tiles) {
        if constexpr (C::SHARED) {
          genc_decode_values<C>(p, valueAhead, w);
          if (i + 2 < r.tiles) genc_decode_rows<C, KT>(p, r, i + 2, ahead);
        } else {
          const auto rowNow = [&](int, int u, int &left) { return genc_decode_row<C, KT>(p, r, i + 1, u, left); };
          genc_decode_values<C>(p, rowNow, w);
        }
      }
    } else {
      const unsigned vAt = vt + (unsigned)((k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * RSB + (lane >> 4) * 16);
#pragma unroll
      for (int j = 0; j < NT / 2; ++j) {
        unsigned b0, b1, b2, b3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "r"(vAt + j * 32));
        genc_mma16816<BF16>(o[2 * j], pa, b0, b1);
        genc_mma16816<BF16>(o[2 * j + 1], pa, b2, b3);
      }
      B::sync(); // the stage is free again
    }
  }

  genc_attn_mark(mr, 6);
  if constexpr (I8) // P carried 64 times each V scale
#pragma unroll
    for (int n = 0; n < NO; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x) o[n][x] *= 1.f / 64.f;
  // The warps meet: each head's max, its sum (over the four lanes), and the
  // warps' O rows [4][8][D] in the tiles' memory (no copy is in flight).
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  if (q == 0) { mW[warp][g] = m; lW[warp][g] = l; }
  float *ow = (float *)genc_attn_tiles;
#pragma unroll
  for (int n = 0; n < NO; ++n)
    if constexpr (REG) { // O^T: heads 2q, 2q + 1 at dims of rows g, g + 8
      const int d0 = genc_decode_vdim(n, g), d1 = genc_decode_vdim(n, g + 8);
      ow[(warp * 8 + 2 * q) * D + d0] = o[n][0];
      ow[(warp * 8 + 2 * q + 1) * D + d0] = o[n][1];
      ow[(warp * 8 + 2 * q) * D + d1] = o[n][2];
      ow[(warp * 8 + 2 * q + 1) * D + d1] = o[n][3];
    } else {
      ow[(warp * 8 + g) * D + n * 8 + 2 * q] = o[n][0];
      ow[(warp * 8 + g) * D + n * 8 + 2 * q + 1] = o[n][1];
    }
  genc_decode_meet<C, G, false, B>(p, t, hb, split, r.used, ow, mW, lW, fS);
  genc_attn_mark(mr, 7);
}

template <typename C, typename B = GencHwBlock>
static __device__ void genc_attn_decode(const GencAttnParams &p) {
  if constexpr (C::DMMA != 0) genc_attn_decode_mma<C, B>(p);
  else genc_attn_decode_fma<C, B>(p);
}
)";
}

} // namespace genc
