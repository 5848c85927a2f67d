// The prefill attention kernel (FlashAttention-2's loop on tensor cores) for
// runs of many tokens over 16-bit caches: @prefill chunks and @encode
// sources, packed without padding. Pasted after attentionDecodeTemplates()
// (it reuses genc_mma16816 and the range, bias and output helpers);
// codegen/AttentionKernels.cpp emits its entry where PMMA is set.
#include "codegen/AttentionKernels.h"

namespace genc {

const char *attentionPrefillTemplates() {
  return R"(// ---- genc prefill attention ----------------------------------------------
// Shape legend — block (x, h), 128 threads = 4 warps:
//   tile x of the run's tile table `p.tiles` [*, 2] = (first token t0, n <= 64)
//     (consecutive tokens of one slot / cross entry / @encode segment);
//   query head h (KV head h / GROUP_ALL); warp w takes tokens t0 + 16w .. +15
//   as the 16 rows of its mma.m16n8k16 (lane g = lane / 4 holds rows g and
//   g + 8, columns 2q, 2q + 1 of each 8-wide tile, q = lane % 4);
//   keys: the union of the rows' ranges, in tiles of 64, staged K and V
//   [2][64][D] 16-bit in shared memory (rows padded by one 16-byte word), two
//   stages: the next tile's copy in flight during this one's math.
// S = Q K^T (Q from the prologue's f32 scratch, rounded to 16 bits), masked
// per row to its own range, online softmax in f32 per row, P repacked from
// the S accumulators as the A operand, O += P V; O / l written once.
// Self-attention keys all come from the cache (the prologue appended this
// run's k, v first: the executor takes this kernel only where no two tokens
// of a run share a cache row); @encode keys from the scratch (f32, rounded
// as they are staged); cross-attention from the cross cache.
template <typename C>
static __device__ __forceinline__ void genc_prefill_stage(const GencAttnParams &p, const GencTokenPlace &pl0, int kh,
                                                          long long j0, long long hi, uint4 *stage) {
  typedef typename C::Cache CT;
  typedef typename CT::S CS;
  constexpr int D = C::D, KT = 64, RW = D * 2 / 16, RS = RW + 1;
  const int nt = (int)(hi - j0 < KT ? hi - j0 : KT);
  uint4 *kt = stage, *vt = stage + KT * RS;
  for (int e = threadIdx.x; e < 2 * KT * RW; e += 128) {
    const int which = e / (KT * RW), row = (e / RW) % KT, c = e % RW;
    uint4 *dst = (which ? vt : kt) + row * RS + c;
    const long long j = j0 + (row < nt ? row : 0);
    if (C::MODE == 2) { // f32 scratch, 8 elements to one 16-byte word
      const float *src = (const float *)p.scratch + j * (long long)C::SSTRIDE +
                         (long long)(C::H + which * C::KVH + kh) * D + c * 8;
      uint4 w = make_uint4(0u, 0u, 0u, 0u);
      if (row < nt) {
        const float4 a = *(const float4 *)src, b = *(const float4 *)(src + 4);
        w.x = (unsigned)CT::st(a.x) | ((unsigned)CT::st(a.y) << 16);
        w.y = (unsigned)CT::st(a.z) | ((unsigned)CT::st(a.w) << 16);
        w.z = (unsigned)CT::st(b.x) | ((unsigned)CT::st(b.y) << 16);
        w.w = (unsigned)CT::st(b.z) | ((unsigned)CT::st(b.w) << 16);
      }
      *dst = w;
    } else {
      // (Taken only where no row wraps: j is the row, as in every slot's own rows.)
      const long long cacheRow = C::MODE == 0 && C::SHARED && p.pairs
                                     ? genc_self_row<C>(p, pl0.slot, kh, j)
                                     : ((long long)(C::MODE == 0 ? pl0.slot : pl0.entry) * C::KVH + kh) * p.capacity + j;
      const CS *src = (const CS *)(which ? p.cacheV : p.cacheK) + cacheRow * D + c * 8;
      const unsigned at = (unsigned)__cvta_generic_to_shared(dst);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(at), "l"(src), "r"(row < nt ? 16 : 0));
    }
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

template <typename C>
static __device__ void genc_attn_prefill(const GencAttnParams &p) {
  typedef typename C::Cache CT;
  typedef typename C::Out O;
  constexpr int D = C::D, KT = 64, BM = 64, BF16 = C::PMMA == 2;
  constexpr int RW = D * 2 / 16, RS = RW + 1, RSB = RS * 16;
  constexpr int KSTEPS = D / 16, NT = D / 8;
  static_assert(D % 16 == 0 && D <= 128, "prefill attention (mma): the head dims it takes");
  extern __shared__ uint4 genc_attn_tiles[]; // [2 stages][K, V][KT][RS]
  __shared__ long long rowLo[BM], rowHi[BM];
  __shared__ long long spanS[2];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, q = lane & 3;
  const long long t0 = ((const int *)p.tiles)[2 * blockIdx.x];
  const int n = ((const int *)p.tiles)[2 * blockIdx.x + 1];
  const int h = blockIdx.y, kh = h / C::GROUP_ALL;
  const GencTokenPlace *places = (const GencTokenPlace *)p.places;
  if (tid == 0) { spanS[0] = 0x7fffffffffffffffLL; spanS[1] = 0; }
  __syncthreads();
  if (tid < BM) {
    long long lo = 0, hi = 0;
    if (tid < n) genc_attn_range<C>(p, places[t0 + tid], lo, hi);
    rowLo[tid] = lo;
    rowHi[tid] = hi;
    if (tid < n && hi > lo) {
      atomicMin(&spanS[0], lo);
      atomicMax(&spanS[1], hi);
    }
  }
  __syncthreads();
  const long long blo = spanS[0], bhi = spanS[1];
  const GencTokenPlace pl0 = places[t0];
  const int tiles = bhi > blo ? (int)((bhi - blo + KT - 1) / KT) : 0;
  if (tiles > 0) genc_prefill_stage<C>(p, pl0, kh, blo, bhi, genc_attn_tiles);

  // This lane's rows: r0 = 16w + g, r1 = r0 + 8 (past n: zero queries, no output).
  const int r0 = warp * 16 + g, r1 = r0 + 8;
  const bool v0 = r0 < n, v1 = r1 < n;
  const long long lo0 = rowLo[r0], hi0 = rowHi[r0], lo1 = rowLo[r1], hi1 = rowHi[r1];
  GencTokenPlace pr0{}, pr1{};
  if (C::BIAS) {
    if (v0) pr0 = places[t0 + r0];
    if (v1) pr1 = places[t0 + r1];
  }
  unsigned qa[KSTEPS][4];
  {
    const float *q0 = (const float *)p.scratch + (t0 + r0) * (long long)C::SSTRIDE + (long long)h * D;
    const float *q1 = (const float *)p.scratch + (t0 + r1) * (long long)C::SSTRIDE + (long long)h * D;
#pragma unroll
    for (int k = 0; k < KSTEPS; ++k)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int d = k * 16 + x * 8 + 2 * q;
        const float2 a = v0 ? *(const float2 *)(q0 + d) : make_float2(0.f, 0.f);
        const float2 b = v1 ? *(const float2 *)(q1 + d) : make_float2(0.f, 0.f);
        qa[k][2 * x] = (unsigned)CT::st(a.x) | ((unsigned)CT::st(a.y) << 16);
        qa[k][2 * x + 1] = (unsigned)CT::st(b.x) | ((unsigned)CT::st(b.y) << 16);
      }
  }
  float o[NT][4];
#pragma unroll
  for (int i = 0; i < NT; ++i)
#pragma unroll
    for (int x = 0; x < 4; ++x) o[i][x] = 0.f;
  const float NEG = -__int_as_float(0x7f800000);
  float m0 = NEG, m1 = NEG, l0 = 0.f, l1 = 0.f; // rows r0, r1 (l: this lane's part)
  const unsigned tilesAt = (unsigned)__cvta_generic_to_shared(genc_attn_tiles);

  for (int i = 0; i < tiles; ++i) {
    const long long j0 = blo + (long long)i * KT;
    if (i + 1 < tiles) {
      genc_prefill_stage<C>(p, pl0, kh, j0 + KT, bhi, genc_attn_tiles + ((i + 1) & 1) * 2 * KT * RS);
      asm volatile("cp.async.wait_group 1;\n" ::);
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::);
    }
    __syncthreads();
    const unsigned kt = tilesAt + (unsigned)((i & 1) * 2 * KT * RSB), vt = kt + KT * RSB;
    // S = Q K^T over the tile's 8 key columns of 8.
    float s[8][4];
#pragma unroll
    for (int c = 0; c < 8; ++c) {
#pragma unroll
      for (int x = 0; x < 4; ++x) s[c][x] = 0.f;
      const unsigned rowAt = kt + (unsigned)((c * 8 + (lane & 7)) * RSB + ((lane >> 3) & 1) * 16);
#pragma unroll
      for (int k = 0; k < KSTEPS; ++k) {
        unsigned b0, b1;
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(b0), "=r"(b1) : "r"(rowAt + k * 32));
        genc_mma16816<BF16>(s[c], qa[k], b0, b1);
      }
    }
    // Scale, bias, each row's own range; the rows' maxima over the quad.
    float mt0 = NEG, mt1 = NEG;
#pragma unroll
    for (int c = 0; c < 8; ++c)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const long long j = j0 + c * 8 + 2 * q + x;
        float a = s[c][x] * p.scale, b = s[c][2 + x] * p.scale;
        if (C::BIAS) {
          if (v0) a += genc_attn_bias<C>(p, pr0, t0 + r0, h, j);
          if (v1) b += genc_attn_bias<C>(p, pr1, t0 + r1, h, j);
        }
        s[c][x] = v0 && j >= lo0 && j < hi0 ? a : NEG;
        s[c][2 + x] = v1 && j >= lo1 && j < hi1 ? b : NEG;
        mt0 = fmaxf(mt0, s[c][x]);
        mt1 = fmaxf(mt1, s[c][2 + x]);
      }
#pragma unroll
    for (int x = 1; x <= 2; x <<= 1) {
      mt0 = fmaxf(mt0, __shfl_xor_sync(0xffffffffu, mt0, x));
      mt1 = fmaxf(mt1, __shfl_xor_sync(0xffffffffu, mt1, x));
    }
    const float n0 = fmaxf(m0, mt0), n1 = fmaxf(m1, mt1);
    const float c0 = m0 == NEG ? 0.f : expf(m0 - n0), c1 = m1 == NEG ? 0.f : expf(m1 - n1);
    m0 = n0;
    m1 = n1;
    l0 *= c0;
    l1 *= c1;
#pragma unroll
    for (int d = 0; d < NT; ++d) {
      o[d][0] *= c0; o[d][1] *= c0;
      o[d][2] *= c1; o[d][3] *= c1;
    }
    // P as A fragments, 16 keys a k-step; O += P V by ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      unsigned pa[4];
#pragma unroll
      for (int y = 0; y < 2; ++y) {
        const float *sc = s[2 * kk + y];
        const float e0 = n0 == NEG ? 0.f : expf(sc[0] - n0), e1 = n0 == NEG ? 0.f : expf(sc[1] - n0);
        const float e2 = n1 == NEG ? 0.f : expf(sc[2] - n1), e3 = n1 == NEG ? 0.f : expf(sc[3] - n1);
        l0 += e0 + e1;
        l1 += e2 + e3;
        pa[2 * y] = (unsigned)CT::st(e0) | ((unsigned)CT::st(e1) << 16);
        pa[2 * y + 1] = (unsigned)CT::st(e2) | ((unsigned)CT::st(e3) << 16);
      }
      const unsigned vAt = vt + (unsigned)((kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * RSB + (lane >> 4) * 16);
#pragma unroll
      for (int j = 0; j < NT / 2; ++j) {
        unsigned b0, b1, b2, b3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "r"(vAt + j * 32));
        genc_mma16816<BF16>(o[2 * j], pa, b0, b1);
        genc_mma16816<BF16>(o[2 * j + 1], pa, b2, b3);
      }
    }
    __syncthreads(); // the stage is free for the tile after next
  }

#pragma unroll
  for (int x = 1; x <= 2; x <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, x);
    l1 += __shfl_xor_sync(0xffffffffu, l1, x);
  }
  typedef typename O::S OS;
#pragma unroll
  for (int d = 0; d < NT; ++d) {
    const int c = d * 8 + 2 * q;
    if (v0) {
      OS *dst = (OS *)p.out;
      dst[genc_attn_out_at<C>(p, t0 + r0, h, c)] = O::st(l0 > 0.f ? o[d][0] / l0 : 0.f);
      dst[genc_attn_out_at<C>(p, t0 + r0, h, c + 1)] = O::st(l0 > 0.f ? o[d][1] / l0 : 0.f);
    }
    if (v1) {
      OS *dst = (OS *)p.out;
      dst[genc_attn_out_at<C>(p, t0 + r1, h, c)] = O::st(l1 > 0.f ? o[d][2] / l1 : 0.f);
      dst[genc_attn_out_at<C>(p, t0 + r1, h, c + 1)] = O::st(l1 > 0.f ? o[d][3] / l1 : 0.f);
    }
  }
}
)";
}

} // namespace genc
