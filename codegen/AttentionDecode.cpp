// The decode attention kernel (Flash-Decoding): one query row per token
// against its cache, K/V tiles staged in shared memory by cp.async several
// tiles ahead so each SM keeps tens of KB of cache reads in flight. Pasted
// after attentionTemplates() (it reuses their range, output and place
// helpers); codegen/AttentionKernels.cpp writes the DGROUP / DSTAGES / DKT
// constants it reads and emits its entry only where decodeEligible().
#include "codegen/AttentionKernels.h"

namespace genc {

const char *attentionDecodeTemplates() {
  return R"(// ---- genc decode attention ----------------------------------------------
static __device__ __forceinline__ void genc_cp16(void *smem, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
               "l"(gmem));
}
static __device__ __forceinline__ void genc_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void genc_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Block (t, y, s), 128 threads: token t's single query row; KV head
// kh = y / DPARTS and its query heads [hb, hb + DGROUP); split s of the
// token's keys, whole tiles of DKT keys each. Shared memory: DSTAGES stages
// of K and V tiles [DKT][RW + 1] 16-byte words (one word of padding per row:
// lanes reading rows in parallel meet distinct banks). Per tile: (A) lane j
// of a warp dots key j with its heads' queries (warps over heads, and over
// keys where the group has fewer than 4 heads); (B) a warp per head turns
// the scores into weights against its running max; (C) each thread adds the
// weighted V rows of DPT dims for its subset of the tile's keys. Every key
// is read from the cache: the prologue appended this step's k, v
// (append == 2). Splits write normalised partials [T, H, S, D] and their
// log-sum-exp; the last to finish (ticket per (t, y)) merges them in split
// order.
template <typename C>
static __device__ void genc_attn_decode(const GencAttnParams &p) {
  typedef typename C::Cache CT;
  typedef typename CT::S CS;
  typedef typename C::Out O;
  constexpr int D = C::D, G = C::DGROUP, ST = C::DSTAGES, KT = C::DKT;
  constexpr int RW = D * (int)sizeof(CS) / 16; // 16-byte words per cache row
  constexpr int RS = RW + 1;                   // padded row stride in shared memory
  constexpr int EW = 16 / (int)sizeof(CS);     // cache elements per word
  constexpr int HW = G < 4 ? G : 4;            // (A): warps across heads
  constexpr int KW = KT / 32;                  // (A): warps across keys
  constexpr int HPW = (G + HW - 1) / HW;       // (A): heads per warp
  constexpr int DPT = D > 256 ? D / 128 : 2;   // (C): dims per thread
  constexpr int NDG = D / DPT;                 // (C): threads across a row
  constexpr int KS = 128 / NDG;                // (C): key subsets
  constexpr int DPARTS = C::GROUP_ALL / G;
  constexpr int SMAX = 256;                    // splits the merge takes
  static_assert(HW * KW <= 4 && KS >= 1, "decode attention: 4 warps");
  static_assert(ST * 2 * KT * RS * 4 >= (KS * G * D > G * SMAX ? KS * G * D : G * SMAX),
                "decode attention: the tiles' memory holds the final sums and merge weights");
  extern __shared__ uint4 genc_attn_tiles[]; // [ST][K, V][KT][RS]
  __shared__ __align__(16) float qS[G][D];
  __shared__ float scS[G][KT];
  __shared__ __align__(16) float pS[KT][G];
  __shared__ float mS[G], lS[G], cS[G];
  __shared__ int lastS;
  const long long t = blockIdx.x;
  const int kh = blockIdx.y / DPARTS, hb = kh * C::GROUP_ALL + (blockIdx.y % DPARTS) * G;
  const int split = blockIdx.z, S = gridDim.z;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  long long lo, hi;
  genc_attn_range<C>(p, pl, lo, hi);
  // Whole tiles per split, and only as many splits as have tiles: every
  // block of a token computes the same `used`.
  const long long n = hi - lo > 0 ? hi - lo : 0, tilesAll = (n + KT - 1) / KT;
  const long long perSplit = (tilesAll + S - 1) / S > 0 ? (tilesAll + S - 1) / S : 1;
  const long long used = tilesAll > 0 ? (tilesAll + perSplit - 1) / perSplit : 1;
  if (split >= used) return;
  const long long a = lo + split * perSplit * KT, b = a + perSplit * KT < hi ? a + perSplit * KT : hi;
  const int tiles = (int)((b - a + KT - 1) / KT);
  const long long rowBase = ((long long)(C::MODE == 0 ? pl.slot : pl.entry) * C::KVH + kh) * p.capacity;
  const CS *cacheK = (const CS *)p.cacheK, *cacheV = (const CS *)p.cacheV;
  auto issue = [&](int i) {
    const long long j0 = a + (long long)i * KT;
    const int nt = (int)(b - j0 < KT ? b - j0 : KT);
    uint4 *kt = genc_attn_tiles + (i % ST) * 2 * KT * RS, *vt = kt + KT * RS;
    for (int e = tid; e < 2 * KT * RW; e += 128) {
      const int which = e / (KT * RW), r = (e / RW) % KT, c = e % RW;
      if (r < nt) {
        const long long j = j0 + r, row = rowBase + (C::MODE == 0 && j >= p.capacity ? j % p.capacity : j);
        genc_cp16((which ? vt : kt) + r * RS + c, (which ? cacheV : cacheK) + row * D + c * EW);
      }
    }
  };
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < tiles) issue(s);
    genc_cp_commit();
  }
  const float *qs = (const float *)p.scratch + t * (long long)C::SSTRIDE + (long long)hb * D;
  for (int e = tid; e < G * D; e += 128) qS[e / D][e % D] = qs[e];
  if (tid < G) { mS[tid] = -__int_as_float(0x7f800000); lS[tid] = 0.f; }
  float acc[G][DPT];
#pragma unroll
  for (int h = 0; h < G; ++h)
#pragma unroll
    for (int i = 0; i < DPT; ++i) acc[h][i] = 0.f;
  const int hw = warp % HW, kw = warp / HW; // (A)
  const int ks = tid / NDG, dg = tid % NDG; // (C)

  for (int i = 0; i < tiles; ++i) {
    if (i + ST - 1 < tiles) issue(i + ST - 1);
    genc_cp_commit();
    genc_cp_wait<ST - 1>(); // this thread's copies of tile i have landed
    __syncthreads();        // and everyone's
    const long long j0 = a + (long long)i * KT;
    const int nt = (int)(b - j0 < KT ? b - j0 : KT);
    const uint4 *kt = genc_attn_tiles + (i % ST) * 2 * KT * RS, *vt = kt + KT * RS;
    // (A) scores
    if (kw < KW) {
      const int jj = kw * 32 + lane;
      float s[HPW];
#pragma unroll
      for (int x = 0; x < HPW; ++x) s[x] = 0.f;
      if (jj < nt) {
#pragma unroll 4
        for (int c = 0; c < RW; ++c) {
          const uint4 w = kt[jj * RS + c];
          const CS *ke = (const CS *)&w;
          float kf[EW];
#pragma unroll
          for (int e = 0; e < EW; ++e) kf[e] = CT::ld(ke[e]);
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
        if (C::BIAS) {
          const long long j = j0 + jj;
          long long dist = C::MODE == 0 ? j - pl.position : j - t;
          dist = dist <= -C::BIAS_M ? -C::BIAS_M + 1 : (dist >= C::BIAS_M ? C::BIAS_M - 1 : dist);
          v += C::Bias::ld(((const typename C::Bias::S *)p.bias)[(long long)(hb + h) * (2 * C::BIAS_M - 1) + dist + C::BIAS_M - 1]);
        }
        scS[h][jj] = jj < nt ? v : -__int_as_float(0x7f800000);
      }
    }
    __syncthreads();
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
    __syncthreads();
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
#pragma unroll
        for (int h = 0; h < G; ++h) {
          const float w = pS[jj][h];
#pragma unroll
          for (int x = 0; x < DPT; ++x) acc[h][x] += w * vf[x];
        }
      }
    }
    __syncthreads(); // the stage and the weights are free again
  }

  // The key subsets' sums meet in the tiles' memory (no copy is in flight).
  float *red = (float *)genc_attn_tiles;
  if (ks < KS)
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
      for (int x = 0; x < DPT; ++x) red[(ks * G + h) * D + dg * DPT + x] = acc[h][x];
  __syncthreads();
  for (int e = tid; e < G * D; e += 128) {
    const int h = e / D, d = e % D;
    float o = 0.f;
#pragma unroll
    for (int k = 0; k < KS; ++k) o += red[(k * G + h) * D + d];
    const float l = lS[h], v = l > 0.f ? o / l : 0.f;
    if (used == 1) ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, hb + h, d)] = O::st(v);
    else ((float *)p.partial)[((t * C::H + hb + h) * (long long)S + split) * D + d] = v;
  }
  if (used == 1) return;
  if (tid < G) {
    const float l = lS[tid];
    ((float *)p.lse)[(t * C::H + hb + tid) * (long long)S + split] =
        l > 0.f ? mS[tid] + logf(l) : -__int_as_float(0x7f800000);
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    unsigned *ticket = (unsigned *)p.tickets + t * gridDim.y + blockIdx.y;
    lastS = atomicAdd(ticket, 1u) == (unsigned)(used - 1);
    if (lastS) *ticket = 0u; // zero again for the next launch
  }
  __syncthreads();
  if (!lastS) return;
  __threadfence();
  float *wS = (float *)genc_attn_tiles; // [G][SMAX] split weights
  for (int h = warp; h < G; h += 4) {
    const float *lse = (const float *)p.lse + (t * C::H + hb + h) * (long long)S;
    float M = -__int_as_float(0x7f800000);
    for (int s = lane; s < used; s += 32) M = fmaxf(M, __ldcg(lse + s));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    float sum = 0.f;
    for (int s = lane; s < used; s += 32) {
      const float x = __ldcg(lse + s), w = x == -__int_as_float(0x7f800000) ? 0.f : expf(x - M);
      wS[h * SMAX + s] = w;
      sum += w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) lS[h] = sum;
  }
  __syncthreads();
  for (int e = tid; e < G * D; e += 128) {
    const int h = e / D, d = e % D;
    const float *part = (const float *)p.partial + (t * C::H + hb + h) * (long long)S * D + d;
    float o = 0.f;
#pragma unroll 4
    for (int s = 0; s < used; ++s) o += wS[h * SMAX + s] * __ldcg(part + (long long)s * D);
    ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, hb + h, d)] = O::st(lS[h] > 0.f ? o / lS[h] : 0.f);
  }
}
)";
}

} // namespace genc
