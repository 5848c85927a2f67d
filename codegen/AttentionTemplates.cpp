// The device code of the attention kernels, as CUDA C++ templates over a
// configuration struct that codegen/AttentionKernels.cpp writes per distinct
// attention op (head dim, heads, GQA group, layouts, RoPE, q/k norm, storage
// types). runtime/cuda/AttentionAbi.h fixes the entry points and their
// parameters; this text is pasted after the prelude and the ABI struct.
#include "codegen/AttentionKernels.h"

namespace genc {

const char *attentionTemplates() {
  return R"(// ---- genc attention templates ---------------------------------------------
// The barrier of an attention block's 128 compute threads: every entry but
// attn_N_stream has just those (where it is __syncthreads); there, a
// producer warp runs apart and never meets them.
static __device__ __forceinline__ void genc_attn_sync() { asm volatile("bar.sync 1, 128;" ::: "memory"); }
// V elements of storage type T at p[0..V) as f32, in 16-byte (or smaller) words.
template <typename T, int V>
static __device__ __forceinline__ void genc_attn_load(float (&dst)[V], const typename T::S *p) {
  alignas(16) typename T::S raw[V];
  genc_vload<typename T::S, V>(raw, p);
#pragma unroll
  for (int i = 0; i < V; ++i) dst[i] = T::ld(raw[i]);
}

// One operand element of token t, head h, dim d, before norm and RoPE.
template <typename C>
static __device__ __forceinline__ float genc_attn_in(const GencAttnParams &p, int which, long long t, int h, int d) {
  typedef typename C::X X;
  if (C::PACKED) {
    long long off = which == 0 ? C::QOFF : which == 1 ? C::KOFF : C::VOFF;
    return X::ld(((const typename X::S *)p.x)[t * p.width + off + (long long)h * C::D + d]);
  }
  const typename X::S *src = (const typename X::S *)(which == 0 ? p.x : which == 1 ? p.k : p.v);
  int heads = which == 0 ? C::H : C::KVH;
  (void)heads;
  return X::ld(src[((long long)h * p.tokens + t) * C::D + d]);
}

// ---- tree attention: this GPU's share of a sharded cache -----------------
// Position p lives on shard p % N at row p / N (runtime/kv/KvLayout.h). The
// kernels work in this shard's rows: the positions below `positions` that
// it holds are its rows [0, genc_shard_rows), row j holds position j·N + r.
// One shard (N <= 1) is the identity; cross-attention and @encode are never
// sharded.
template <typename C>
static __device__ __forceinline__ long long genc_shard_rows(const GencAttnParams &p, long long positions) {
  if (C::MODE != 0 || p.shards <= 1) return positions;
  return positions > p.shard ? (positions - p.shard + p.shards - 1) / p.shards : 0;
}
template <typename C>
static __device__ __forceinline__ long long genc_shard_pos(const GencAttnParams &p, long long row) {
  return C::MODE != 0 || p.shards <= 1 ? row : row * p.shards + p.shard;
}
// The row of position `pos` on this shard; -1 where another shard holds it.
template <typename C>
static __device__ __forceinline__ long long genc_shard_row(const GencAttnParams &p, long long pos) {
  if (C::MODE != 0 || p.shards <= 1) return pos;
  return pos % p.shards == p.shard ? pos / p.shards : -1;
}

// ---- self-attention cache rows ----------------------------------------------
// The row (in units of D elements) of index `index` of region `region` for KV
// head kh, shared prompts' layout (runtime/kv/KvLayout.h): `homes` regions of
// `capacity` rows, then one of `branchCapacity` a slot.
template <typename C>
static __device__ __forceinline__ long long genc_region_row(const GencAttnParams &p, long long region, int kh,
                                                            long long index) {
  // The remainder only where a ring wraps (a window): it is a long
  // sequence of instructions, and this runs for every key.
  if (region < p.homes) return (region * C::KVH + kh) * p.capacity + (index < p.capacity ? index : index % p.capacity);
  return p.homes * C::KVH * p.capacity + ((region - p.homes) * C::KVH + kh) * p.branchCapacity +
         (index < p.branchCapacity ? index : index % p.branchCapacity);
}
// Cache row j (a position; a shard's row under tree attention) of `slot`'s
// KV head kh: where its pair points when beams share their prompt, else
// the slot's own rows.
template <typename C>
static __device__ __forceinline__ long long genc_self_row(const GencAttnParams &p, int slot, int kh, long long j) {
  if (C::SHARED && p.pairs) {
    const int2 r = ((const int2 *)p.pairs)[(long long)slot * p.pairStride + j];
    return genc_region_row<C>(p, r.x, kh, r.y);
  }
  return ((long long)slot * C::KVH + kh) * p.capacity + (j < p.capacity ? j : j % p.capacity);
}
// The row token `pl`'s own k, v of KV head kh go to (its shard's row `own`).
template <typename C>
static __device__ __forceinline__ long long genc_write_row(const GencAttnParams &p, const GencTokenPlace &pl, int kh,
                                                           long long own) {
  if (C::SHARED && p.pairs) return genc_region_row<C>(p, pl.writeRegion, kh, pl.writeIndex);
  return ((long long)pl.slot * C::KVH + kh) * p.capacity + own % p.capacity;
}

// ---- rows: norm + RoPE of one token's q, k, v rows ------------------------
// Rows [r0, r1) of token t in the order q heads, k heads, v heads: the q/k
// RMSNorm, then RoPE. Each row goes to dst[(row - r0) * D + d] (f32) where
// dst is set, and a k or v row to its cache row at the token's position
// where toCache. Every thread of the block calls it (it synchronises).
template <typename C>
static __device__ void genc_attn_rows(const GencAttnParams &p, long long t, int r0, int r1, float *dst,
                                      bool toCache, const GencTokenPlace &pl) {
  constexpr int NK = C::MODE == 1 ? 0 : C::KVH; // cross attention: q only
  __shared__ float inv[C::H + C::KVH];
  __shared__ float red[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = 4;
  if (C::QKNORM == 1) { // per head: one warp per q/k row
    const int h1 = r1 < C::H + NK ? r1 : C::H + NK;
    for (int h = r0 + warp; h < h1; h += nwarps) {
      int which = h < C::H ? 0 : 1, hh = h < C::H ? h : h - C::H;
      float ss = 0.f;
      for (int d = lane; d < C::D; d += 32) { float v = genc_attn_in<C>(p, which, t, hh, d); ss += v * v; }
      for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      if (lane == 0) inv[h] = 1.f / sqrtf(ss / (float)C::D + C::EPS);
    }
  } else if (C::QKNORM == 2) { // over all heads of the operand (every caller sums it again)
    // The routine's 128 threads alone meet (named barrier 1): the step
    // kernel runs it on its first four warps. The warps' sums in warp order,
    // as genc_block_sum adds them in a block of 128.
    for (int which = 0; which < (NK ? 2 : 1); ++which) {
      int n = which == 0 ? C::H : C::KVH;
      float ss = 0.f;
      for (int e = threadIdx.x; e < n * C::D; e += 128) {
        float v = genc_attn_in<C>(p, which, t, e / C::D, e % C::D); ss += v * v;
      }
      for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      genc_attn_sync();
      if (lane == 0) red[warp] = ss;
      genc_attn_sync();
      if (threadIdx.x == 0) inv[which] = 1.f / sqrtf((red[0] + red[1] + red[2] + red[3]) / (float)(n * C::D) + C::EPS);
      genc_attn_sync();
    }
  }
  genc_attn_sync();
  long long pos = 0;
  if (C::ROPE) {
    pos = ((const long long *)p.positions)[t];
    pos = pos < 0 ? 0 : (pos >= p.positionsInTable ? p.positionsInTable - 1 : pos);
  }
  for (int e = r0 * C::D + threadIdx.x; e < r1 * C::D; e += 128) {
    int row = e / C::D, d = e % C::D;
    int which = row < C::H ? 0 : row < C::H + NK ? 1 : 2;
    int h = which == 0 ? row : which == 1 ? row - C::H : row - C::H - NK;
    // x·scale after the norm, for element d and its RoPE partner.
    auto normed = [&](int dd) {
      float v = genc_attn_in<C>(p, which, t, h, dd);
      if (C::QKNORM && which < 2) {
        float f = C::QKNORM == 1 ? inv[which == 0 ? h : C::H + h] : inv[which];
        const typename C::Norm::S *w = (const typename C::Norm::S *)(which == 0 ? p.qNorm : p.kNorm);
        int wi = (which == 0 ? C::QNW : C::KNW) == C::D ? dd : h * C::D + dd;
        v = v * f * C::Norm::ld(w[wi]);
      }
      return v;
    };
    float v = normed(d);
    if (C::ROPE && which < 2 && d < C::R) {
      float rot;
      if (C::ROPE == 1) rot = d < C::R / 2 ? -normed(d + C::R / 2) : normed(d - C::R / 2);
      else rot = (d % 2 == 0) ? -normed(d + 1) : normed(d - 1);
      float c = C::Rope::ld(((const typename C::Rope::S *)p.cosTable)[pos * C::R + d]);
      float s = C::Rope::ld(((const typename C::Rope::S *)p.sinTable)[pos * C::R + d]);
      v = v * c + rot * s;
    }
    if (dst) dst[(long long)(row - r0) * C::D + d] = v;
    if (C::MODE == 0 && toCache && which > 0) {
      typedef typename C::Cache CT;
      ((typename CT::S *)(which == 1 ? p.cacheK : p.cacheV))
          [genc_write_row<C>(p, pl, h, genc_shard_row<C>(p, pl.position)) * C::D + d] =
              CT::st(v);
    }
  }
  genc_attn_sync();
}

// ---- the decode kernels' query rows ----------------------------------------
// Heads [h0, h0 + N) of token t's q, RoPE applied, as f32 into dst[N][D],
// from a 128-thread block. Every load is issued before the first store: in
// genc_attn_rows's loop each element's loads (x, its RoPE partner, cos,
// sin) wait for the element before, since its stores to dst may alias them
// (8 round trips a block at N·D = 1024: ~15,000 cycles of a 64k split's
// ~70,000 on an H100, 2026-11-25, docs/performance.md). Eight elements a
// thread, 16-byte words; the shapes that do not split so (a q/k norm, a
// rotary half not a multiple of eight) take genc_attn_rows.
template <typename C, int N>
static __device__ __forceinline__ void genc_attn_query_rows(const GencAttnParams &p, long long t, int h0, float *dst,
                                                            const GencTokenPlace &pl) {
  constexpr int V = 8, NV = N * C::D / V, PER = (NV + 127) / 128;
  constexpr bool WORDS = C::QKNORM == 0 && C::D % V == 0 && (!C::PACKED || C::QOFF % V == 0) &&
                         (C::ROPE == 0 || (C::ROPE == 1 && C::R % (2 * V) == 0) || (C::ROPE == 2 && C::R % V == 0));
  if constexpr (!WORDS) {
    genc_attn_rows<C>(p, t, h0, h0 + N, dst, false, pl);
  } else {
    if (C::PACKED && p.width % V != 0) { // uniform: the whole block goes one way
      genc_attn_rows<C>(p, t, h0, h0 + N, dst, false, pl);
      return;
    }
    typedef typename C::X X;
    typedef typename C::Rope RT;
    long long pos = 0;
    if (C::ROPE) {
      pos = ((const long long *)p.positions)[t];
      pos = pos < 0 ? 0 : (pos >= p.positionsInTable ? p.positionsInTable - 1 : pos);
    }
    float x[PER][V], y[PER][V], c[PER][V], s[PER][V];
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int e = threadIdx.x + k * 128;
      if (e >= NV) continue;
      const int h = h0 + e * V / C::D, d = e * V % C::D;
      const typename X::S *row = C::PACKED ? (const typename X::S *)p.x + t * p.width + C::QOFF + (long long)h * C::D
                                           : (const typename X::S *)p.x + ((long long)h * p.tokens + t) * C::D;
      genc_attn_load<X, V>(x[k], row + d);
      if (C::ROPE && d < C::R) {
        if (C::ROPE == 1) genc_attn_load<X, V>(y[k], row + (d < C::R / 2 ? d + C::R / 2 : d - C::R / 2));
        genc_attn_load<RT, V>(c[k], (const typename RT::S *)p.cosTable + pos * C::R + d);
        genc_attn_load<RT, V>(s[k], (const typename RT::S *)p.sinTable + pos * C::R + d);
      }
    }
    genc_attn_sync(); // dst may be memory the block used before
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int e = threadIdx.x + k * 128;
      if (e >= NV) continue;
      const int row = e * V / C::D, d = e * V % C::D;
      alignas(16) float v[V];
#pragma unroll
      for (int i = 0; i < V; ++i) {
        v[i] = x[k][i];
        if (C::ROPE && d < C::R) { // as genc_attn_rows rounds it
          const float rot = C::ROPE == 1 ? (d < C::R / 2 ? -y[k][i] : y[k][i]) : (i % 2 == 0 ? -x[k][i ^ 1] : x[k][i ^ 1]);
          v[i] = v[i] * c[k][i] + rot * s[k][i];
        }
      }
      float4 *to = (float4 *)(dst + (long long)row * C::D + d);
      to[0] = make_float4(v[0], v[1], v[2], v[3]);
      to[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
    genc_attn_sync();
  }
}

// Whether token t's k, v go into the cache before its keys are read (a
// decode step, append == 2): not where a later token of the run maps to the
// same rolling row (that token's to write, as genc_attn_append_row), nor
// where another shard holds its position.
template <typename C>
static __device__ __forceinline__ bool genc_attn_appends_now(const GencAttnParams &p, const GencTokenPlace &pl) {
  return C::MODE == 0 && p.append == 2 && !(p.shards <= 1 && pl.position + p.capacity < pl.runEnd) &&
         genc_shard_row<C>(p, pl.position) >= 0;
}

// ---- prologue: norm + RoPE into f32 scratch [T, H + 2 KVH, D] ---------------
// Block (t, y) does rows [y·RB, y·RB + RB) of token t: a decode step's few
// tokens still spread over many blocks, each with a few elements per thread
// (one block per token left a 128-thread block walking every row of it).
template <typename C>
static __device__ void genc_attn_prologue(const GencAttnParams &p) {
  constexpr int NK = C::MODE == 1 ? 0 : C::KVH;
  constexpr int ROWS = C::H + 2 * NK;
  constexpr int RB = gencAttnPrologueRows(C::D);
  const int r0 = blockIdx.y * RB, r1 = r0 + RB < ROWS ? r0 + RB : ROWS;
  if (r0 >= ROWS) return;
  for (long long t = blockIdx.x; t < p.tokens; t += gridDim.x) {
    const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
    genc_attn_rows<C>(p, t, r0, r1, (float *)p.scratch + t * (long long)C::SSTRIDE + (long long)r0 * C::D,
                      genc_attn_appends_now<C>(p, pl), pl);
  }
}

// ---- attend: one split of one token's keys for one KV head's query group ----
// Key ranges per mode: self-attention the causal (windowed) prefix, cross the
// entry's source, @encode the token's own segment.
template <typename C>
static __device__ __forceinline__ void genc_attn_range(const GencAttnParams &p, const GencTokenPlace &pl,
                                                       long long &lo, long long &hi) {
  if (C::MODE == 0) {
    lo = genc_shard_rows<C>(p, C::WINDOW > 0 ? (pl.position - C::WINDOW + 1 > 0 ? pl.position - C::WINDOW + 1 : 0) : 0);
    hi = genc_shard_rows<C>(p, pl.position + 1);
  } else if (C::MODE == 1) {
    lo = 0;
    hi = ((const long long *)p.crossLengths)[pl.entry];
  } else {
    lo = pl.segStart;
    hi = pl.segStart + pl.segLen;
  }
}

// An i8 cross cache's row scales of K (which 0) or V (which 1), f32 by cache
// row: they follow the layer's K and V codes (runtime/kv/KvLayout.h: K's, then
// V's, each block padded to 16 bytes), so their place comes from the two
// halves' distance.
template <typename C>
static __device__ __forceinline__ const float *genc_cross_scales(const GencAttnParams &p, int which) {
  const long long half = (const char *)p.cacheV - (const char *)p.cacheK, rows = half / C::D;
  return (const float *)((const char *)p.cacheV + half + (which ? (rows * 4 + 15) / 16 * 16 : 0));
}

// This lane's VEC-chunks of key j's K (which 0) or V (which 1) row of KV head
// kh, as f32: from the cache, or (this run's own tokens) from the scratch.
template <typename C>
static __device__ __forceinline__ void genc_attn_row(const GencAttnParams &p, const GencTokenPlace &pl, long long t,
                                                     int kh, long long j, int which, int li,
                                                     float (&f)[(C::D + C::VEC * C::LANES - 1) / (C::VEC * C::LANES)][C::VEC]) {
  constexpr int D = C::D, L = C::LANES, VEC = C::VEC, NCH = (D + VEC * L - 1) / (VEC * L);
  typedef typename C::Cache CT;
  const typename CT::S *cached = 0;
  const float *fresh = 0;
  if (C::MODE == 0) {
    const long long jp = genc_shard_pos<C>(p, j); // row j's position
    if (jp < pl.cachedBefore)
      cached = (const typename CT::S *)(which ? p.cacheV : p.cacheK) + genc_self_row<C>(p, pl.slot, kh, j) * D;
    else
      fresh = (const float *)p.scratch + (t - (pl.position - jp)) * (long long)C::SSTRIDE +
              (long long)(C::H + which * C::KVH + kh) * D;
  } else if (C::MODE == 1) {
    cached = (const typename CT::S *)(which ? p.cacheV : p.cacheK) +
             (((long long)pl.entry * C::KVH + kh) * p.capacity + j) * D;
  } else {
    fresh = (const float *)p.scratch + j * (long long)C::SSTRIDE + (long long)(C::H + which * C::KVH + kh) * D;
  }
  // An i8 cross cache: codes times the row's scale.
  const float scale =
      C::CROSS_I8 && C::MODE == 1 ? genc_cross_scales<C>(p, which)[((long long)pl.entry * C::KVH + kh) * p.capacity + j]
                                  : 1.f;
#pragma unroll
  for (int c = 0; c < NCH; ++c) {
    const int d0 = (c * L + li) * VEC;
    if (d0 < D) {
      if (cached) genc_attn_load<CT, VEC>(f[c], cached + d0);
      else genc_attn_load<genc_f32, VEC>(f[c], fresh + d0);
      if (C::CROSS_I8 && C::MODE == 1)
#pragma unroll
        for (int i = 0; i < VEC; ++i) f[c][i] *= scale;
    } else {
#pragma unroll
      for (int i = 0; i < VEC; ++i) f[c][i] = 0.f;
    }
  }
}

// T5's relative bias of query head h for key j (token t at place pl): the
// distance, clamped to the table's range, picks the entry.
template <typename C>
static __device__ __forceinline__ float genc_attn_bias(const GencAttnParams &p, const GencTokenPlace &pl, long long t,
                                                       int h, long long j) {
  long long dist = C::MODE == 0 ? genc_shard_pos<C>(p, j) - pl.position : j - t;
  dist = dist <= -C::BIAS_M ? -C::BIAS_M + 1 : (dist >= C::BIAS_M ? C::BIAS_M - 1 : dist);
  return C::Bias::ld(((const typename C::Bias::S *)p.bias)[(long long)h * (2 * C::BIAS_M - 1) + dist + C::BIAS_M - 1]);
}

// Where head h, dim d of token t's output goes.
template <typename C>
static __device__ __forceinline__ long long genc_attn_out_at(const GencAttnParams &p, long long t, int h, int d) {
  return C::MERGE ? (t * C::H + h) * C::D + d : ((long long)h * p.tokens + t) * C::D + d;
}

// Token t's k, v of KV head kh into its slot's cache row. A rolling window's
// row that a later token of this run also maps to is left to that token (the
// blocks run in no set order).
template <typename C>
static __device__ __forceinline__ void genc_attn_append_row(const GencAttnParams &p, const GencTokenPlace &pl,
                                                            long long t, int kh) {
  const long long own = genc_shard_row<C>(p, pl.position);
  if (C::MODE != 0 || own < 0 || (p.shards <= 1 && pl.position + p.capacity < pl.runEnd)) return;
  const float *src = (const float *)p.scratch + t * (long long)C::SSTRIDE;
  long long row = genc_write_row<C>(p, pl, kh, own) * C::D;
  typedef typename C::Cache CT;
  for (int d = threadIdx.x; d < C::D; d += blockDim.x) {
    ((typename CT::S *)p.cacheK)[row + d] = CT::st(src[(long long)(C::H + kh) * C::D + d]);
    ((typename CT::S *)p.cacheV)[row + d] = CT::st(src[(long long)(C::H + C::KVH + kh) * C::D + d]);
  }
}

// The split's keys go by in tiles of KT: (A) each lane group dots one key's K
// with the group's queries, the scores waiting in shared memory; (B) a warp
// per head takes the tile's max and turns the scores into weights against
// the running max; (C) each lane group adds its keys' weighted V rows. Every
// head's running max and sum rescale once per tile, not once per key, and
// the lane groups meet once at the end (shuffles within a warp, then the
// four warps through shared memory, in a fixed order).
template <typename C>
static __device__ void genc_attn_attend(const GencAttnParams &p) {
  constexpr int D = C::D, G = C::GROUP, L = C::LANES, VEC = C::VEC;
  constexpr int NCH = (D + VEC * L - 1) / (VEC * L); // VEC-chunks per lane
  constexpr int KPB = 128 / L;                       // lane groups: keys in flight per block
  constexpr int KT = 256;                            // keys per tile
  constexpr int SH = G * KT > 4 * G * D ? G * KT : 4 * G * D;
  __shared__ float sh[SH]; // the tile's scores [G][KT]; at the end the warps' sums [4][G * D]
  __shared__ float mS[G], lS[G], cS[G];
  __shared__ int lastS;
  constexpr int PARTS = C::GROUP_ALL / C::GROUP; // blocks sharing one KV head
  const long long t = blockIdx.x;
  const int kh = blockIdx.y / PARTS, hb = kh * C::GROUP_ALL + (blockIdx.y % PARTS) * G;
  const int split = blockIdx.z, S = gridDim.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, grp = threadIdx.x / L, li = threadIdx.x % L;
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  long long lo, hi;
  genc_attn_range<C>(p, pl, lo, hi);
  // A split reads at least MIN_KEYS keys: a short range takes fewer splits
  // than the launch has (S is fixed per graph); the blocks past them leave.
  constexpr long long MIN_KEYS = 32;
  const long long n = hi - lo, want = (n + MIN_KEYS - 1) / MIN_KEYS;
  const long long used = want < 1 ? 1 : (want < S ? want : S), chunk = (n + used - 1) / used;
  if (split >= used) return;
  const long long a = lo + split * chunk, b = a + chunk < hi ? a + chunk : hi;

  // This lane's slices of the group's queries.
  float q[G][NCH][VEC];
  const float *qs = (const float *)p.scratch + t * (long long)C::SSTRIDE;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int c = 0; c < NCH; ++c) {
      const int d0 = (c * L + li) * VEC;
      if (d0 < D) {
        genc_attn_load<genc_f32, VEC>(q[g][c], qs + (long long)(hb + g) * D + d0);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) q[g][c][i] = 0.f;
      }
    }
  float acc[G][NCH][VEC];
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int c = 0; c < NCH; ++c)
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[g][c][i] = 0.f;
  if (threadIdx.x < G) { mS[threadIdx.x] = -__int_as_float(0x7f800000); lS[threadIdx.x] = 0.f; }
  __syncthreads();

  for (long long t0 = a; t0 < b; t0 += KT) {
    const int nt = (int)(b - t0 < KT ? b - t0 : KT);
    // (A) scores. Every lane runs every iteration (the shuffles need the
    // whole warp); a lane group past the tile's end loads nothing.
#pragma unroll 4
    for (int j0 = 0; j0 < nt; j0 += KPB) {
      const int jj = j0 + grp;
      const bool valid = jj < nt;
      const long long j = t0 + (valid ? jj : 0);
      float kf[NCH][VEC];
      genc_attn_row<C>(p, pl, t, kh, j, 0, li, kf);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float s = 0.f;
#pragma unroll
        for (int c = 0; c < NCH; ++c)
#pragma unroll
          for (int i = 0; i < VEC; ++i) s += q[g][c][i] * kf[c][i];
#pragma unroll
        for (int o = L / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        s *= p.scale;
        if (C::BIAS) s += genc_attn_bias<C>(p, pl, t, hb + g, j);
        if (li == 0 && valid) sh[g * KT + jj] = s;
      }
    }
    __syncthreads();
    // (B) weights: a warp per head
    for (int g = warp; g < G; g += 4) {
      float mt = -__int_as_float(0x7f800000);
      for (int jj = lane; jj < nt; jj += 32) mt = fmaxf(mt, sh[g * KT + jj]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
      const float mOld = mS[g], mNew = fmaxf(mOld, mt);
      float ls = 0.f;
      for (int jj = lane; jj < nt; jj += 32) {
        float e = mNew == -__int_as_float(0x7f800000) ? 0.f : expf(sh[g * KT + jj] - mNew);
        sh[g * KT + jj] = e;
        ls += e;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) ls += __shfl_xor_sync(0xffffffffu, ls, o);
      // Shuffles order no memory: every lane has read mS[g] before lane 0
      // writes it (racecheck's warp-level WAR otherwise).
      __syncwarp();
      if (lane == 0) {
        const float c = mOld == -__int_as_float(0x7f800000) ? 0.f : expf(mOld - mNew);
        cS[g] = c;
        lS[g] = lS[g] * c + ls;
        mS[g] = mNew;
      }
    }
    __syncthreads();
    // (C) weighted V rows
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float c = cS[g];
#pragma unroll
      for (int cc = 0; cc < NCH; ++cc)
#pragma unroll
        for (int i = 0; i < VEC; ++i) acc[g][cc][i] *= c;
    }
#pragma unroll 4
    for (int jj = grp; jj < nt; jj += KPB) {
      float vf[NCH][VEC];
      genc_attn_row<C>(p, pl, t, kh, t0 + jj, 1, li, vf);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float w = sh[g * KT + jj];
#pragma unroll
        for (int c = 0; c < NCH; ++c)
#pragma unroll
          for (int i = 0; i < VEC; ++i) acc[g][c][i] += w * vf[c][i];
      }
    }
    __syncthreads();
  }

  // The lane groups' sums: within a warp by shuffles, then the four warps.
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int c = 0; c < NCH; ++c)
#pragma unroll
      for (int i = 0; i < VEC; ++i)
#pragma unroll
        for (int o = L; o < 32; o <<= 1) acc[g][c][i] += __shfl_xor_sync(0xffffffffu, acc[g][c][i], o);
  if (lane < L)
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int c = 0; c < NCH; ++c)
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          int d = (c * L + li) * VEC + i;
          if (d < D) sh[warp * G * D + g * D + d] = acc[g][c][i];
        }
  __syncthreads();
  typedef typename C::Out O;
  for (int e = threadIdx.x; e < G * D; e += blockDim.x) {
    const int g = e / D, d = e % D;
    const float l = lS[g], o = (sh[e] + sh[G * D + e]) + (sh[2 * G * D + e] + sh[3 * G * D + e]);
    const float v = l > 0.f ? o / l : 0.f;
    if (used == 1) ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, hb + g, d)] = O::st(v);
    else ((float *)p.partial)[((t * C::H + hb + g) * (long long)S + split) * D + d] = v;
  }
  if (used == 1 && p.lseOut && threadIdx.x < G) {
    const float l = lS[threadIdx.x];
    ((float *)p.lseOut)[t * C::H + hb + threadIdx.x] = l > 0.f ? mS[threadIdx.x] + logf(l) : -__int_as_float(0x7f800000);
  }
  if (used > 1) {
    if (threadIdx.x < G) {
      const float l = lS[threadIdx.x];
      ((float *)p.lse)[(t * C::H + hb + threadIdx.x) * (long long)S + split] =
          l > 0.f ? mS[threadIdx.x] + logf(l) : -__int_as_float(0x7f800000);
    }
    // The last split to finish merges: its partials are visible to it once
    // every block's writes are fenced before its ticket.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned *ticket = (unsigned *)p.tickets + t * gridDim.y + blockIdx.y;
      const unsigned before = atomicAdd(ticket, 1u);
      lastS = before == (unsigned)(used - 1);
      if (lastS) *ticket = 0u; // zero again for the next launch
    }
    __syncthreads();
    if (!lastS) return;
    __threadfence();
    // Each head's split weights exp(lse - max) into shared memory (a warp a
    // head), then every output element sums its splits' partials: loads
    // that do not wait on one another.
    float *wS = sh; // [G][64]: S <= 64
    for (int g = warp; g < G; g += 4) {
      const float *lse = (const float *)p.lse + (t * C::H + hb + g) * (long long)S;
      const float x0 = lane < used ? __ldcg(lse + lane) : -__int_as_float(0x7f800000);
      const float x1 = lane + 32 < used ? __ldcg(lse + lane + 32) : -__int_as_float(0x7f800000);
      float M = fmaxf(x0, x1);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
      const float w0 = x0 == -__int_as_float(0x7f800000) ? 0.f : expf(x0 - M);
      const float w1 = x1 == -__int_as_float(0x7f800000) ? 0.f : expf(x1 - M);
      wS[g * 64 + lane] = w0;
      wS[g * 64 + lane + 32] = w1;
      float w = w0 + w1;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
      if (lane == 0) {
        lS[g] = w;
        if (p.lseOut) ((float *)p.lseOut)[t * C::H + hb + g] = w > 0.f ? M + logf(w) : -__int_as_float(0x7f800000);
      }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < G * D; e += blockDim.x) {
      const int g = e / D, d = e % D;
      const float *part = (const float *)p.partial + (t * C::H + hb + g) * (long long)S * D + d;
      float o = 0.f;
#pragma unroll 4
      for (int s = 0; s < used; ++s) o += wS[g * 64 + s] * __ldcg(part + (long long)s * D);
      ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, hb + g, d)] = O::st(lS[g] > 0.f ? o / lS[g] : 0.f);
    }
  }
  // Every split of this head has read the cache: the token's k, v go in.
  if (p.append && blockIdx.y % PARTS == 0) genc_attn_append_row<C>(p, pl, t, kh);
}

// ---- append this run's k, v where the attend could not ---------------------
template <typename C>
static __device__ void genc_attn_append(const GencAttnParams &p) {
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[blockIdx.x];
  genc_attn_append_row<C>(p, pl, blockIdx.x, blockIdx.y);
}

// ---- tree attention: the GPUs' outputs combined around two all-reduces -----
// Block (t, h): this GPU's output row weighed by exp(lse - max over GPUs)
// into [w · o | w] (f32) before the sum over GPUs, then that sum's quotient
// back into the output. A GPU with none of the keys has lse -inf: w = 0.
// With `combine` 1 the collective is one all-gather of every GPU's [o | lse]
// (N parts of [T, H, D + 1]) and the finish does the max and the weights.
template <typename C>
static __device__ void genc_attn_weigh(const GencAttnParams &p) {
  typedef typename C::Out O;
  const long long t = blockIdx.x, th = t * C::H + blockIdx.y;
  const float l = ((const float *)p.lseOut)[th];
  const float w = p.combine ? 1.f : l == -__int_as_float(0x7f800000) ? 0.f : expf(l - ((const float *)p.lseMax)[th]);
  float *dst = (float *)p.packed + ((p.combine ? p.shard * p.tokens * C::H : 0) + th) * (C::D + 1);
  for (int d = threadIdx.x; d < C::D; d += blockDim.x)
    dst[d] = w * O::ld(((const typename O::S *)p.out)[genc_attn_out_at<C>(p, t, blockIdx.y, d)]);
  if (threadIdx.x == 0) dst[C::D] = p.combine ? l : w;
}
template <typename C>
static __device__ void genc_attn_finish(const GencAttnParams &p) {
  typedef typename C::Out O;
  const long long t = blockIdx.x, th = t * C::H + blockIdx.y;
  const float *src = (const float *)p.packed + th * (C::D + 1);
  if (!p.combine) {
    const float w = src[C::D];
    for (int d = threadIdx.x; d < C::D; d += blockDim.x)
      ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, blockIdx.y, d)] = O::st(w > 0.f ? src[d] / w : 0.f);
    return;
  }
  const long long part = p.tokens * C::H * (C::D + 1); // one GPU's [T, H, D + 1]
  float M = -__int_as_float(0x7f800000), sum = 0.f;
  for (long long r = 0; r < p.shards; ++r) M = fmaxf(M, src[r * part + C::D]);
  for (long long r = 0; r < p.shards; ++r) {
    const float l = src[r * part + C::D];
    sum += l == -__int_as_float(0x7f800000) ? 0.f : expf(l - M);
  }
  for (int d = threadIdx.x; d < C::D; d += blockDim.x) {
    float o = 0.f;
    for (long long r = 0; r < p.shards; ++r) {
      const float l = src[r * part + C::D];
      if (l != -__int_as_float(0x7f800000)) o += expf(l - M) * src[r * part + d];
    }
    ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, blockIdx.y, d)] = O::st(sum > 0.f ? o / sum : 0.f);
  }
}
)";
}

} // namespace genc
