// Decode attention at long contexts, a lab kernel (not genrun's): can a
// split-KV kernel whose K/V tiles stream by TMA into a ring of shared memory,
// issued before the kernel waits on its predecessor, reach #9's 85% of the
// copy bandwidth? genrun's register kernel is at 43-50% on the H200 (session
// 19); its blocks run a fixed chain (the dependent-launch wait, the query
// rows, the warps' meeting) that all blocks of a one-wave grid run at the
// same time, so nothing streams under it (docs/decode-experiments.md).
//
// Workload (#9's (c)): B sequences x L keys, 16 query heads over 2 KV heads,
// head dim 128, f16 K/V [NL copies][B][KVH][L][128] (NL layers, so that no
// call finds its cache in L2), q [B][16][128] f16, pre-rotated.
//
// The kernel, grid (splits, KVH, B), one producer warp and NC consumer warps:
//   producer (one lane): tiles of KT = 16 NC keys, K and V each as two TMA
//     boxes of 64 dims (128-byte swizzle) into stage i % NS, an mbarrier
//     full/empty pair a stage; it starts at once (the cache rows do not
//     depend on the previous kernel);
//   consumers: wait on the previous kernel (griddepcontrol.wait: the queries
//     would come from it), load their 8 heads' queries as mma A fragments,
//     then per tile warp w takes keys 16w..16w+15: S = Q K^T (m16n8k16,
//     heads as rows 0..7), online softmax in f32 (exp2), O += P V (V by
//     ldmatrix.trans); at the end the warps meet in shared memory and write
//     the split's normalised O and log2-sum-exp.
// A combine kernel (grid B x 16, a thread a dim) merges the splits; it and
// the next call's kernel launch with programmatic dependent launch, as
// genrun's do. MATH=0 variants stream the same tiles and compute nothing.
//
// Measured (H200, session 26, docs/performance.md): correct against the f32
// reference in every variant; 4 warps and 6 stages of 32 KB, one block an
// SM: 22.3 us at 1 x 65,536 (71% of the copy bandwidth; genrun's register
// kernel 36.5, SDPA 22.6), 21.5 at 4 x 16,384 (73%); the same tiles with no
// math 20.3 / 19.6 (78-80%). A last split merging (a ticket) instead of the
// combine kernel lost everywhere (39.2 / 23.8).
//
//   nvcc -O3 -arch=sm_90a -std=c++17 -o dist/attn_lab tools/attn_lab.cu -lcuda
//   dist/attn_lab            # there; prints one table (and checks each
//                            # variant against a naive f32 kernel)
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int H = 16, KVH = 2, G = H / KVH, D = 128;

#define CHECK(x)                                                                                                       \
  do {                                                                                                                 \
    cudaError_t e_ = (x);                                                                                              \
    if (e_ != cudaSuccess) {                                                                                           \
      std::fprintf(stderr, "attn_lab: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);                      \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

struct Params {
  const __half *q;   // [B][H][D]
  float *part;       // [B][H][S][D]: a split's normalised O
  float *lse;        // [B][H][S]: its log2-sum-exp
  float *out;        // [B][H][D]
  unsigned *tickets; // [B][KVH], zero: MERGE variants' splits done
  int B, L, S, perSplit; // perSplit: keys a split, a multiple of the tile
  long long rowBase;     // the layer's first row in the tensor maps
  float scaleLog2;
};

__device__ __forceinline__ unsigned smemAddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbarInit(unsigned long long *b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarWait(unsigned long long *b, unsigned parity) {
  asm volatile("{\n .reg .pred P1;\n LAB_WAIT:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               " @P1 bra DONE;\n bra LAB_WAIT;\n DONE:\n }" ::"r"(smemAddr(b)),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void mbarArrive(unsigned long long *b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smemAddr(b)) : "memory");
}
__device__ __forceinline__ void mbarExpect(unsigned long long *b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tmaLoad(void *dst, const CUtensorMap *map, int dim, int row, unsigned long long *bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(smemAddr(dst)), "l"((unsigned long long)map), "r"(dim), "r"(row), "r"(smemAddr(bar))
               : "memory");
}
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldsm4(unsigned (&r)[4], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
}
__device__ __forceinline__ void ldsm4t(unsigned (&r)[4], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
}
__device__ __forceinline__ unsigned packHalf(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned *>(&h);
}

// A box of rows x 64 dims (128 bytes a row) as TMA's 128-byte swizzle lays
// it out: 16-byte chunk c of row r at chunk c ^ (r % 8), so the 8 rows an
// ldmatrix reads at one chunk fall in 8 different bank groups.
__device__ __forceinline__ unsigned swz(unsigned box, int row, int chunk) {
  return box + (unsigned)(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// Shape legend: NC consumer warps, KT = 16 NC keys a tile; a stage holds K
// then V, each [2 boxes: dims 0-63, 64-127][KT rows][128 B].
template <int NC, int NS, bool MATH, bool MERGE>
__global__ void __launch_bounds__((NC + 1) * 32) attnLab(const __grid_constant__ CUtensorMap kMap,
                                                        const __grid_constant__ CUtensorMap vMap, const Params p) {
  constexpr int KT = 16 * NC, BOX = KT * 128, HALF = 2 * BOX, STAGE = 2 * HALF;
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char *ring = (unsigned char *)(((unsigned long long)smem + 1023) & ~1023ull);
  // The warps' meeting, in stage 0 once every warp is past its last tile.
  float *oW = (float *)ring;                      // [NC][G][D]
  float *mW = oW + NC * G * D, *lW = mW + NC * G; // [NC][G]
  static_assert((NC * G * D + 2 * NC * G) * 4 <= STAGE, "attn_lab: a stage holds the meeting");
  __shared__ __align__(8) unsigned long long full[NS], empty[NS];
  const int split = blockIdx.x, kh = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const long long a = (long long)split * p.perSplit;
  const int keys = (int)(p.L - a < p.perSplit ? p.L - a : p.perSplit), tiles = (keys + KT - 1) / KT;
  if (threadIdx.x == 0) {
    for (int s = 0; s < NS; ++s) {
      mbarInit(&full[s], 1);
      mbarInit(&empty[s], NC);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (warp == NC) { // the producer: cache rows are the previous steps', no wait
    if (lane == 0) {
      const int row0 = (int)(p.rowBase + ((long long)b * KVH + kh) * p.L + a);
      for (int i = 0; i < tiles; ++i) {
        const int s = i % NS;
        if (i >= NS)
          mbarWait(&empty[s], (unsigned)((i / NS - 1) & 1));
        mbarExpect(&full[s], 2 * HALF);
        unsigned char *st = ring + s * STAGE;
        tmaLoad(st, &kMap, 0, row0 + i * KT, &full[s]);
        tmaLoad(st + BOX, &kMap, 64, row0 + i * KT, &full[s]);
        tmaLoad(st + HALF, &vMap, 0, row0 + i * KT, &full[s]);
        tmaLoad(st + HALF + BOX, &vMap, 64, row0 + i * KT, &full[s]);
      }
    }
    return;
  }
  asm volatile("griddepcontrol.wait;" ::: "memory"); // the queries (and the partials' readers) are the previous kernel's
  const int g = lane >> 2, q4 = lane & 3, hb = kh * G;
  // Q as A fragments (rows: heads 0..7; rows 8..15 zero), dims 16k.. of step k.
  unsigned qa[8][4];
  {
    const __half *qr = p.q + ((long long)b * H + hb + g) * D;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      qa[k][0] = *(const unsigned *)(qr + 16 * k + 2 * q4);
      qa[k][2] = *(const unsigned *)(qr + 16 * k + 8 + 2 * q4);
      qa[k][1] = qa[k][3] = 0u;
    }
  }
  float o[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int x = 0; x < 4; ++x) o[n][x] = 0.f;
  float m = -INFINITY, l = 0.f;
  const unsigned ringAt = smemAddr(ring);
  const int mi = lane >> 3, r8 = lane & 7;
  unsigned fold = 0;
  for (int i = 0; i < tiles; ++i) {
    const int s = i % NS;
    mbarWait(&full[s], (unsigned)((i / NS) & 1));
    const unsigned kAt = ringAt + s * STAGE, vAt = kAt + HALF;
    if constexpr (!MATH) {
      fold ^= *(const unsigned *)(ring + s * STAGE + threadIdx.x * 16);
    } else {
      // S = Q K^T over this warp's 16 keys: n-tile 0 keys 0..7, 1 keys 8..15.
      float sc[2][4] = {};
      const int key = warp * 16 + r8 + 8 * (mi >> 1);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        unsigned r[4]; // matrices: (keys 0-7, chunk 2k), (0-7, 2k+1), (8-15, 2k), (8-15, 2k+1)
        const int chunk = 2 * k + (mi & 1);
        ldsm4(r, swz(kAt + (chunk >> 3) * BOX, key, chunk & 7));
        mma16816(sc[0], qa[k], r[0], r[1]);
        mma16816(sc[1], qa[k], r[2], r[3]);
      }
      // keys past the range: a short last tile (TMA zero-fills rows past the map)
      const int k0 = i * KT + warp * 16;
      float x[4];
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          x[n * 2 + e] = k0 + n * 8 + 2 * q4 + e < keys ? sc[n][e] * p.scaleLog2 : -INFINITY;
      float tm = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
      tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 1));
      tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 2));
      const float mn = fmaxf(m, tm), corr = exp2f(m - mn);
      float pr[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) pr[e] = exp2f(x[e] - mn);
      l = l * corr + (pr[0] + pr[1] + pr[2] + pr[3]);
      m = mn;
      const unsigned pa[4] = {packHalf(pr[0], pr[1]), 0u, packHalf(pr[2], pr[3]), 0u};
      const int vkey = warp * 16 + r8 + 8 * (mi & 1);
#pragma unroll
      for (int j = 0; j < 8; ++j) { // dims 16j..16j+15
        unsigned r[4]; // matrices: (keys 0-7, chunk 2j), (8-15, 2j), (0-7, 2j+1), (8-15, 2j+1)
        const int chunk = 2 * j + (mi >> 1);
        ldsm4t(r, swz(vAt + (chunk >> 3) * BOX, vkey, chunk & 7));
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          o[2 * j][e] *= corr;
          o[2 * j + 1][e] *= corr;
        }
        mma16816(o[2 * j], pa, r[0], r[1]);
        mma16816(o[2 * j + 1], pa, r[2], r[3]);
      }
    }
    __syncwarp();
    if (lane == 0)
      mbarArrive(&empty[s]);
  }
  // The warps meet: each writes its heads' (m, l, O), then thread t of the
  // NC * 32 takes head t / 16's dims 8 (t % 16) ..+7 (NC = 4: 8 heads x 128).
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  asm volatile("bar.sync 1, %0;" ::"r"(NC * 32) : "memory"); // every warp's reads of the ring done
  if (q4 == 0) {
    mW[warp * G + g] = m;
    lW[warp * G + g] = l;
  }
#pragma unroll
  for (int n = 0; n < 16; ++n) {
    oW[(warp * G + g) * D + 8 * n + 2 * q4] = o[n][0];
    oW[(warp * G + g) * D + 8 * n + 2 * q4 + 1] = o[n][1];
  }
  asm volatile("bar.sync 1, %0;" ::"r"(NC * 32) : "memory");
  for (int e = threadIdx.x; e < G * D / 8; e += NC * 32) {
    const int h = e / (D / 8), d0 = (e % (D / 8)) * 8;
    float M = -INFINITY;
    for (int w = 0; w < NC; ++w) M = fmaxf(M, mW[w * G + h]);
    float Ls = 0.f, acc[8] = {};
    for (int w = 0; w < NC; ++w) {
      const float f = mW[w * G + h] == -INFINITY ? 0.f : exp2f(mW[w * G + h] - M);
      Ls += lW[w * G + h] * f;
#pragma unroll
      for (int x = 0; x < 8; ++x) acc[x] += oW[(w * G + h) * D + d0 + x] * f;
    }
    const long long row = ((long long)b * H + hb + h) * p.S + split;
    float4 *to = (float4 *)(p.part + row * D + d0);
    const float inv = Ls > 0.f ? 1.f / Ls : 0.f;
    to[0] = make_float4(acc[0] * inv, acc[1] * inv, acc[2] * inv, acc[3] * inv);
    to[1] = make_float4(acc[4] * inv, acc[5] * inv, acc[6] * inv, acc[7] * inv);
    if (d0 == 0)
      p.lse[row] = MATH ? M + log2f(Ls) : (float)(fold & 1);
  }
  if constexpr (MERGE) { // the split of (b, kh) to finish last merges its 8 heads
    __shared__ unsigned last;
    __threadfence();
    asm volatile("bar.sync 1, %0;" ::"r"(NC * 32) : "memory");
    if (threadIdx.x == 0) {
      const unsigned t = atomicAdd(p.tickets + b * KVH + kh, 1u);
      last = t == (unsigned)p.S - 1;
      if (last)
        p.tickets[b * KVH + kh] = 0; // for the next call (it waits on this kernel)
    }
    asm volatile("bar.sync 1, %0;" ::"r"(NC * 32) : "memory");
    if (!last)
      return;
    __threadfence();
    float *wS = oW; // [G][S] weights 2^(lse - max), then [G] sums
    for (int e = threadIdx.x; e < G; e += NC * 32) {
      const float *ls = p.lse + ((long long)b * H + hb + e) * p.S;
      float M = -INFINITY, den = 0.f;
      for (int x = 0; x < p.S; ++x) M = fmaxf(M, __ldcg(ls + x));
      for (int x = 0; x < p.S; ++x) {
        const float f = exp2f(__ldcg(ls + x) - M);
        wS[e * p.S + x] = f;
        den += f;
      }
      wS[G * p.S + e] = 1.f / den;
    }
    asm volatile("bar.sync 1, %0;" ::"r"(NC * 32) : "memory");
    for (int e = threadIdx.x; e < G * D / 4; e += NC * 32) {
      const int h = e / (D / 4), d0 = (e % (D / 4)) * 4;
      const float *pr = p.part + ((long long)b * H + hb + h) * p.S * D + d0;
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
      for (int x = 0; x < p.S; ++x) {
        const float4 v = __ldcg((const float4 *)(pr + (long long)x * D));
        const float f = wS[h * p.S + x];
        acc.x += f * v.x;
        acc.y += f * v.y;
        acc.z += f * v.z;
        acc.w += f * v.w;
      }
      const float inv = wS[G * p.S + h];
      *(float4 *)(p.out + ((long long)b * H + hb + h) * D + d0) =
          make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
    }
  }
}

// out[b][h][d] = the splits' O weighted by 2^(lse - max): grid B x H, 512
// threads: the weights once into shared memory, then 4 groups of 128 (a
// thread a dim) each over a quarter of the splits, loads unrolled.
__global__ void __launch_bounds__(512) combine(const Params p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __shared__ float w[1024], red[16], acc[4][D];
  const long long bh = blockIdx.x;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const float *ls = p.lse + bh * p.S;
  float M = -INFINITY;
  for (int s = t; s < p.S; s += 512) M = fmaxf(M, ls[s]);
  for (int o = 16; o > 0; o /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  if (lane == 0) red[warp] = M;
  __syncthreads();
  M = red[0];
  for (int x = 1; x < 16; ++x) M = fmaxf(M, red[x]);
  for (int s = t; s < p.S; s += 512) w[s] = exp2f(ls[s] - M);
  __syncthreads();
  const int d = t % D, grp = t / D;
  float num = 0.f;
#pragma unroll 8
  for (int s = grp; s < p.S; s += 4) num += w[s] * p.part[(bh * p.S + s) * D + d];
  acc[grp][d] = num;
  __syncthreads();
  if (grp == 0) {
    float den = 0.f;
    for (int s = 0; s < p.S; ++s) den += w[s];
    p.out[bh * D + d] = (acc[0][d] + acc[1][d] + acc[2][d] + acc[3][d]) / den;
  }
}

// The reference, f32 from the same f16 values: block (b, h), scores into `sc`.
__global__ void reference(const __half *q, const __half *k, const __half *v, float *sc, float *out, int L,
                          float scale) {
  const int b = blockIdx.x / H, h = blockIdx.x % H, kh = h / G;
  const __half *qr = q + ((long long)b * H + h) * D;
  const __half *kr = k + ((long long)b * KVH + kh) * L * D, *vr = v + ((long long)b * KVH + kh) * L * D;
  float *s = sc + (long long)blockIdx.x * L;
  __shared__ float red[256];
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < L; j += blockDim.x) {
    float acc = 0.f;
    for (int d = 0; d < D; ++d) acc += __half2float(qr[d]) * __half2float(kr[(long long)j * D + d]);
    s[j] = acc * scale;
    mx = fmaxf(mx, s[j]);
  }
  red[threadIdx.x] = mx;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  mx = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int j = threadIdx.x; j < L; j += blockDim.x) {
    s[j] = expf(s[j] - mx);
    sum += s[j];
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  sum = red[0];
  if (threadIdx.x < D) {
    float acc = 0.f;
    for (int j = 0; j < L; ++j) acc += s[j] * __half2float(vr[(long long)j * D + threadIdx.x]);
    out[((long long)b * H + h) * D + threadIdx.x] = acc / sum;
  }
}

__global__ void fillHalf(__half *x, long long n, unsigned seed, float scale) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2half(((h & 0xffff) / 65535.f - 0.5f) * scale);
  }
}

CUtensorMap mapOf(const __half *base, long long rows, int boxRows) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)D, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)D * 2};
  const cuuint32_t box[2] = {64, (cuuint32_t)boxRows}, estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)base, dims, strides, box, estr,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "attn_lab: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
    std::exit(1);
  }
  return m;
}

template <typename Fn> float graphMicros(Fn enqueue, int reps) {
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  enqueue(st, 0); // warm
  CHECK(cudaStreamSynchronize(st));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) enqueue(st, i);
  CHECK(cudaStreamEndCapture(st, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  CHECK(cudaGraphLaunch(ge, st));
  CHECK(cudaStreamSynchronize(st));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int t = 0; t < 5; ++t) {
    CHECK(cudaEventRecord(e0, st));
    CHECK(cudaGraphLaunch(ge, st));
    CHECK(cudaEventRecord(e1, st));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::fmin(best, ms * 1000.f / reps);
  }
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaStreamDestroy(st));
  return best;
}

struct Setup {
  int B, L, NL;
  __half *q, *k, *v;
  float *part, *lse, *out, *ref, *sc;
  unsigned *tickets;
};

template <int NC, int NS, bool MATH, bool MERGE = false>
void runVariant(const Setup &u, int perSm, double copyBw, int sms, const char *name) {
  constexpr int KT = 16 * NC, STAGE = 4 * KT * 128;
  const size_t shared = 1024 + NS * STAGE;
  auto kern = attnLab<NC, NS, MATH, MERGE>;
  CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
  int fit = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kern, (NC + 1) * 32, shared));
  if (fit < 1) {
    std::printf("| %s | does not fit (%zu B shared) |\n", name, shared);
    return;
  }
  const int per = perSm > 0 ? std::min(perSm, fit) : fit;
  // splits: about `per` blocks an SM in one wave, each a whole number of tiles
  const int want = (per * sms + u.B * KVH - 1) / (u.B * KVH);
  const int tilesAll = (u.L + KT - 1) / KT, perTiles = (tilesAll + want - 1) / want;
  Params p{};
  p.B = u.B;
  p.L = u.L;
  p.perSplit = perTiles * KT;
  p.S = (u.L + p.perSplit - 1) / p.perSplit;
  p.q = u.q;
  p.part = u.part;
  p.lse = u.lse;
  p.out = u.out;
  p.tickets = u.tickets;
  p.scaleLog2 = 1.4426950408889634f / std::sqrt((float)D);
  const long long rows = (long long)u.NL * u.B * KVH * u.L;
  const CUtensorMap km = mapOf(u.k, rows, KT), vm = mapOf(u.v, rows, KT);
  auto enqueue = [&](cudaStream_t st, int i) {
    Params pi = p;
    pi.rowBase = (long long)(i % u.NL) * u.B * KVH * u.L;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t c{};
    c.gridDim = dim3(p.S, KVH, u.B);
    c.blockDim = dim3((NC + 1) * 32);
    c.dynamicSmemBytes = shared;
    c.stream = st;
    c.attrs = at;
    c.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&c, kern, km, vm, pi));
    if (MERGE)
      return;
    cudaLaunchConfig_t cc = c;
    cc.gridDim = dim3(u.B * H);
    cc.blockDim = dim3(512);
    cc.dynamicSmemBytes = 0;
    CHECK(cudaLaunchKernelEx(&cc, combine, pi));
  };
  // correctness: layer 0 against the reference (output poisoned first)
  CHECK(cudaMemset(u.out, 0xff, (size_t)u.B * H * D * 4));
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));
  enqueue(st, 0);
  CHECK(cudaStreamSynchronize(st));
  CHECK(cudaStreamDestroy(st));
  std::vector<float> got((size_t)u.B * H * D), want_((size_t)u.B * H * D);
  CHECK(cudaMemcpy(got.data(), u.out, got.size() * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(want_.data(), u.ref, want_.size() * 4, cudaMemcpyDeviceToHost));
  double err = 0;
  for (size_t i = 0; i < got.size(); ++i) err = std::fmax(err, std::fabs((double)got[i] - want_[i]));
  if (got[0] != got[0]) err = INFINITY;
  const float us = graphMicros(enqueue, 40);
  const double bytes = (double)u.B * u.L * KVH * D * 2 * 2;
  std::printf("| %s | %d x %d | %d | %d x %d | %.1f | %.2f | %.0f%% | %s |\n", name, u.B, u.L, per, p.S, u.B * KVH,
              us, bytes / us / 1e6, 100.0 * bytes / us / 1e6 / (copyBw / 1e12), MATH ? (err < 2e-3 ? "ok" : "WRONG")
                                                                                    : "-");
  if (MATH && !(err < 2e-3))
    std::printf("   max |out - ref| = %.3g\n", err);
}

} // namespace

int main(int argc, char **argv) {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const long long tokens = argc > 1 ? std::atoll(argv[1]) : 65536;
  // copy bandwidth: bytes read + written by a 1 GiB device copy
  double copyBw = 0;
  {
    const size_t n = size_t(1) << 30;
    void *x, *y;
    CHECK(cudaMalloc(&x, n));
    CHECK(cudaMalloc(&y, n));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaMemcpy(y, x, n, cudaMemcpyDeviceToDevice));
    float best = 1e30f;
    for (int i = 0; i < 5; ++i) {
      CHECK(cudaEventRecord(e0));
      CHECK(cudaMemcpy(y, x, n, cudaMemcpyDeviceToDevice));
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      best = std::fmin(best, ms);
    }
    copyBw = 2.0 * n / (best * 1e-3);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
  }
  std::printf("device: %s, %d SMs; copy bandwidth %.3f TB/s (read + write); 16 query / 2 KV heads, head dim 128, "
              "f16, batch x context = %lld\n\n",
              prop.name, sms, copyBw / 1e12, tokens);
  std::printf("| variant | batch x context | blocks an SM | splits x (batch x KV heads) | us a call | TB/s | of copy bw "
              "| vs f32 reference |\n|---|---|---|---|---|---|---|---|\n");
  for (int B : {1, 4, 16}) {
    Setup u{};
    u.B = B;
    u.L = (int)(tokens / B);
    u.NL = 4;
    const long long kv = (long long)u.NL * B * KVH * u.L * D;
    CHECK(cudaMalloc(&u.q, (size_t)B * H * D * 2));
    CHECK(cudaMalloc(&u.k, kv * 2));
    CHECK(cudaMalloc(&u.v, kv * 2));
    CHECK(cudaMalloc(&u.part, (size_t)B * H * 1024 * D * 4));
    CHECK(cudaMalloc(&u.lse, (size_t)B * H * 1024 * 4));
    CHECK(cudaMalloc(&u.out, (size_t)B * H * D * 4));
    CHECK(cudaMalloc(&u.ref, (size_t)B * H * D * 4));
    CHECK(cudaMalloc(&u.sc, (size_t)B * H * u.L * 4));
    CHECK(cudaMalloc(&u.tickets, (size_t)B * KVH * 4));
    CHECK(cudaMemset(u.tickets, 0, (size_t)B * KVH * 4));
    fillHalf<<<1024, 256>>>(u.q, (long long)B * H * D, 17u + B, 4.f);
    fillHalf<<<4096, 256>>>(u.k, kv, 29u + B, 2.f);
    fillHalf<<<4096, 256>>>(u.v, kv, 43u + B, 2.f);
    reference<<<B * H, 256>>>(u.q, u.k, u.v, u.sc, u.ref, u.L, 1.f / std::sqrt((float)D));
    CHECK(cudaDeviceSynchronize());
    runVariant<4, 6, false>(u, 1, copyBw, sms, "stream only, 4 warps, 6 stages of 32 KB");
    runVariant<4, 6, true>(u, 1, copyBw, sms, "attention, 4 warps, 6 stages of 32 KB");
    runVariant<4, 6, true, true>(u, 1, copyBw, sms, "attention, 4 warps, 6 stages, last split merges");
    runVariant<4, 3, true>(u, 2, copyBw, sms, "attention, 4 warps, 3 stages, 2 blocks an SM");
    runVariant<4, 3, true, true>(u, 2, copyBw, sms, "attention, 4 warps, 3 stages, 2 an SM, last merges");
    runVariant<8, 3, true>(u, 1, copyBw, sms, "attention, 8 warps, 3 stages of 64 KB");
    runVariant<8, 3, true, true>(u, 1, copyBw, sms, "attention, 8 warps, 3 stages, last split merges");
    CHECK(cudaFree(u.q));
    CHECK(cudaFree(u.k));
    CHECK(cudaFree(u.v));
    CHECK(cudaFree(u.part));
    CHECK(cudaFree(u.lse));
    CHECK(cudaFree(u.out));
    CHECK(cudaFree(u.ref));
    CHECK(cudaFree(u.sc));
    CHECK(cudaFree(u.tickets));
  }
  return 0;
}
