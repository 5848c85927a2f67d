// The device code of the attention kernels, as CUDA C++ templates over a
// configuration struct that codegen/AttentionKernels.cpp writes per distinct
// attention op (head dim, heads, GQA group, layouts, RoPE, q/k norm, storage
// types). runtime/cuda/AttentionAbi.h fixes the entry points and their
// parameters; this text is pasted after the prelude and the ABI struct.
#include "codegen/AttentionKernels.h"

namespace genc {

const char *attentionTemplates() {
  return R"(// ---- genc attention templates ---------------------------------------------
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

// ---- prologue: norm + RoPE into f32 scratch [T, H + 2 KVH, D] ---------------
// Block (t, y) does rows [y·RB, y·RB + RB) of token t: a decode step's few
// tokens still spread over many blocks, each with a few elements per thread
// (one block per token left a 128-thread block walking every row of it).
template <typename C>
static __device__ void genc_attn_prologue(const GencAttnParams &p) {
  constexpr int NK = C::MODE == 1 ? 0 : C::KVH; // cross attention: q only
  constexpr int ROWS = C::H + 2 * NK;
  constexpr int RB = gencAttnPrologueRows(C::D);
  const int r0 = blockIdx.y * RB, r1 = r0 + RB < ROWS ? r0 + RB : ROWS;
  if (r0 >= ROWS) return;
  __shared__ float inv[C::H + C::KVH];
  __shared__ float red[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  for (long long t = blockIdx.x; t < p.tokens; t += gridDim.x) {
    float *out = (float *)p.scratch + t * (long long)C::SSTRIDE;
    if (C::QKNORM == 1) { // per head: one warp per head of this block's q/k rows
      const int h1 = r1 < C::H + NK ? r1 : C::H + NK;
      for (int h = r0 + warp; h < h1; h += nwarps) {
        int which = h < C::H ? 0 : 1, hh = h < C::H ? h : h - C::H;
        float ss = 0.f;
        for (int d = lane; d < C::D; d += 32) { float v = genc_attn_in<C>(p, which, t, hh, d); ss += v * v; }
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if (lane == 0) inv[h] = 1.f / sqrtf(ss / (float)C::D + C::EPS);
      }
    } else if (C::QKNORM == 2) { // over all heads of the operand (every block sums it again)
      for (int which = 0; which < (NK ? 2 : 1); ++which) {
        int n = which == 0 ? C::H : C::KVH;
        float ss = 0.f;
        for (int e = threadIdx.x; e < n * C::D; e += blockDim.x) {
          float v = genc_attn_in<C>(p, which, t, e / C::D, e % C::D); ss += v * v;
        }
        ss = genc_block_sum(ss, red);
        if (threadIdx.x == 0) inv[which] = 1.f / sqrtf(ss / (float)(n * C::D) + C::EPS);
        __syncthreads();
      }
    }
    __syncthreads();
    long long pos = 0;
    if (C::ROPE) {
      pos = ((const long long *)p.positions)[t];
      pos = pos < 0 ? 0 : (pos >= p.positionsInTable ? p.positionsInTable - 1 : pos);
    }
    for (int e = r0 * C::D + threadIdx.x; e < r1 * C::D; e += blockDim.x) {
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
      out[(long long)row * C::D + d] = v;
    }
    __syncthreads();
  }
}

// ---- attend: one split of one token's keys for one KV head's query group ----
template <typename C>
static __device__ void genc_attn_attend(const GencAttnParams &p) {
  constexpr int D = C::D, G = C::GROUP, L = C::LANES, VEC = C::VEC;
  constexpr int NCH = (D + VEC * L - 1) / (VEC * L); // VEC-chunks per lane
  constexpr int KPB = 128 / L;                       // keys in flight per block
  __shared__ float accS[G * D];
  __shared__ float mS[KPB * G], lS[KPB * G];
  constexpr int PARTS = C::GROUP_ALL / C::GROUP; // blocks sharing one KV head
  const long long t = blockIdx.x;
  const int kh = blockIdx.y / PARTS, hb = kh * C::GROUP_ALL + (blockIdx.y % PARTS) * G;
  const int split = blockIdx.z, S = gridDim.z;
  const int grp = threadIdx.x / L, li = threadIdx.x % L;
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  long long lo, hi;
  if (C::MODE == 0) {
    lo = C::WINDOW > 0 ? (pl.position - C::WINDOW + 1 > 0 ? pl.position - C::WINDOW + 1 : 0) : 0;
    hi = pl.position + 1;
  } else if (C::MODE == 1) {
    lo = 0;
    hi = ((const long long *)p.crossLengths)[pl.entry];
  } else {
    lo = pl.segStart;
    hi = pl.segStart + pl.segLen;
  }
  // A split reads at least MIN_KEYS keys: a short range takes fewer splits
  // than the launch has (S is fixed per graph), and the blocks past them only
  // mark their rows empty for the combine.
  constexpr long long MIN_KEYS = 64;
  const long long n = hi - lo, want = (n + MIN_KEYS - 1) / MIN_KEYS;
  const long long used = want < 1 ? 1 : (want < S ? want : S), chunk = (n + used - 1) / used;
  if (split >= used) {
    if (threadIdx.x < G)
      ((float *)p.lse)[(t * C::H + hb + threadIdx.x) * (long long)S + split] = -__int_as_float(0x7f800000);
    return;
  }
  const long long a = lo + split * chunk, b = a + chunk < hi ? a + chunk : hi;

  // This lane's slices of the group's queries, pre-scaled.
  float q[G][NCH][VEC];
  const float *qs = (const float *)p.scratch + t * (long long)C::SSTRIDE;
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int c = 0; c < NCH; ++c)
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        int d = (c * L + li) * VEC + i;
        q[g][c][i] = d < D ? qs[(long long)(hb + g) * D + d] : 0.f;
      }
  float m[G], l[G], acc[G][NCH][VEC];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -__int_as_float(0x7f800000);
    l[g] = 0.f;
#pragma unroll
    for (int c = 0; c < NCH; ++c)
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[g][c][i] = 0.f;
  }
  typedef typename C::Cache CT;
  // Every lane runs every iteration (the shuffles need the whole warp);
  // lanes past the split's end load nothing and update nothing.
  for (long long j0 = a; j0 < b; j0 += KPB) {
    const long long j = j0 + grp;
    const bool valid = j < b;
    float kf[NCH][VEC], vf[NCH][VEC];
    // Key j: from the cache, or (this run's own tokens) from the scratch.
    const typename CT::S *kc = 0, *vc = 0;
    const float *kfresh = 0, *vfresh = 0;
    if (!valid) {
    } else if (C::MODE == 0) {
      if (j < pl.cachedBefore) {
        long long row = (((long long)pl.slot * C::KVH + kh) * p.capacity + j % p.capacity) * D;
        kc = (const typename CT::S *)p.cacheK + row;
        vc = (const typename CT::S *)p.cacheV + row;
      } else {
        const float *src = (const float *)p.scratch + (t - (pl.position - j)) * (long long)C::SSTRIDE;
        kfresh = src + (long long)(C::H + kh) * D;
        vfresh = src + (long long)(C::H + C::KVH + kh) * D;
      }
    } else if (C::MODE == 1) {
      long long row = (((long long)pl.entry * C::KVH + kh) * p.capacity + j) * D;
      kc = (const typename CT::S *)p.cacheK + row;
      vc = (const typename CT::S *)p.cacheV + row;
    } else {
      const float *src = (const float *)p.scratch + j * (long long)C::SSTRIDE;
      kfresh = src + (long long)(C::H + kh) * D;
      vfresh = src + (long long)(C::H + C::KVH + kh) * D;
    }
#pragma unroll
    for (int c = 0; c < NCH; ++c) {
      int d0 = (c * L + li) * VEC;
      if (valid && d0 < D) {
        if (kc) { genc_attn_load<CT, VEC>(kf[c], kc + d0); genc_attn_load<CT, VEC>(vf[c], vc + d0); }
        else { genc_attn_load<genc_f32, VEC>(kf[c], kfresh + d0); genc_attn_load<genc_f32, VEC>(vf[c], vfresh + d0); }
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) kf[c][i] = vf[c][i] = 0.f;
      }
    }
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
      if (C::BIAS) {
        long long dist = C::MODE == 0 ? j - pl.position : j - t;
        dist = dist <= -C::BIAS_M ? -C::BIAS_M + 1 : (dist >= C::BIAS_M ? C::BIAS_M - 1 : dist);
        s += C::Bias::ld(((const typename C::Bias::S *)p.bias)[(long long)(hb + g) * (2 * C::BIAS_M - 1) + dist + C::BIAS_M - 1]);
      }
      if (!valid)
        continue;
      float mNew = fmaxf(m[g], s), corr = expf(m[g] - mNew), pr = expf(s - mNew);
      l[g] = l[g] * corr + pr;
#pragma unroll
      for (int c = 0; c < NCH; ++c)
#pragma unroll
        for (int i = 0; i < VEC; ++i) acc[g][c][i] = acc[g][c][i] * corr + pr * vf[c][i];
      m[g] = mNew;
    }
  }
  // Combine the block's lane groups, in group order (deterministic).
  if (li == 0)
#pragma unroll
    for (int g = 0; g < G; ++g) { mS[grp * G + g] = m[g]; lS[grp * G + g] = l[g]; }
  for (int e = threadIdx.x; e < G * D; e += blockDim.x) accS[e] = 0.f;
  __syncthreads();
  float M[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    M[g] = -__int_as_float(0x7f800000);
    for (int k = 0; k < KPB; ++k) M[g] = fmaxf(M[g], mS[k * G + g]);
  }
  for (int k = 0; k < KPB; ++k) {
    if (grp == k)
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float w = m[g] == -__int_as_float(0x7f800000) ? 0.f : expf(m[g] - M[g]);
#pragma unroll
        for (int c = 0; c < NCH; ++c)
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            int d = (c * L + li) * VEC + i;
            if (d < D) accS[g * D + d] += w * acc[g][c][i];
          }
      }
    __syncthreads();
  }
  for (int e = threadIdx.x; e < G * D; e += blockDim.x) {
    int g = e / D, d = e % D;
    float lsum = 0.f;
    for (int k = 0; k < KPB; ++k)
      if (mS[k * G + g] != -__int_as_float(0x7f800000)) lsum += lS[k * G + g] * expf(mS[k * G + g] - M[g]);
    long long r = (t * C::H + hb + g) * (long long)S + split;
    ((float *)p.partial)[r * D + d] = lsum > 0.f ? accS[e] / lsum : 0.f;
    if (d == 0) ((float *)p.lse)[r] = lsum > 0.f ? M[g] + logf(lsum) : -__int_as_float(0x7f800000);
  }
}

// ---- combine the splits; self-attention appends this run's k, v ------------
template <typename C>
static __device__ void genc_attn_combine(const GencAttnParams &p) {
  const long long t = blockIdx.x;
  const int h = blockIdx.y, S = (int)p.splits;
  const long long r0 = (t * C::H + h) * (long long)S;
  const float *lse = (const float *)p.lse + r0;
  float M = -__int_as_float(0x7f800000);
  for (int s = 0; s < S; ++s) M = fmaxf(M, lse[s]);
  float wsum = 0.f;
  for (int s = 0; s < S; ++s)
    if (lse[s] != -__int_as_float(0x7f800000)) wsum += expf(lse[s] - M);
  typedef typename C::Out O;
  for (int d = threadIdx.x; d < C::D; d += blockDim.x) {
    float o = 0.f;
    for (int s = 0; s < S; ++s)
      if (lse[s] != -__int_as_float(0x7f800000)) o += expf(lse[s] - M) * ((const float *)p.partial)[(r0 + s) * C::D + d];
    o = wsum > 0.f ? o / wsum : 0.f;
    long long at = C::MERGE ? (t * C::H + h) * C::D + d : ((long long)h * p.tokens + t) * C::D + d;
    ((typename O::S *)p.out)[at] = O::st(o);
  }
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  // A rolling window's row that a later token of this run also maps to is
  // left to that token (the blocks run in no set order).
  if (C::MODE == 0 && h < C::KVH && pl.position + p.capacity >= pl.runEnd) {
    const float *src = (const float *)p.scratch + t * (long long)C::SSTRIDE;
    long long row = (((long long)pl.slot * C::KVH + h) * p.capacity + pl.position % p.capacity) * C::D;
    typedef typename C::Cache CT;
    for (int d = threadIdx.x; d < C::D; d += blockDim.x) {
      ((typename CT::S *)p.cacheK)[row + d] = CT::st(src[(long long)(C::H + h) * C::D + d]);
      ((typename CT::S *)p.cacheV)[row + d] = CT::st(src[(long long)(C::H + C::KVH + h) * C::D + d]);
    }
  }
}
)";
}

} // namespace genc
