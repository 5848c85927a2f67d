// attn_N_stream: the decode kernel of long contexts on sm_90. The tile and
// register kernels (codegen/AttentionDecode.cpp) run a fixed chain in every
// block — the dependent-launch wait, the query rows, the warps' meeting —
// and a one-wave grid runs it in all blocks at once, with nothing streaming
// under it: 43-50% of the copy bandwidth at 64k keys on an H200,
// 2026-11-28. Here a producer warp streams the split's K/V tiles by TMA into
// a ring of shared memory from the block's first instruction (cache rows are
// earlier steps'; the step's own row waits for its append), so the chain
// runs while HBM streams (tools/attn_lab.cu: 71% against 45% on an H200,
// 2026-11-29; docs/performance.md). Pasted after the decode
// templates (it reuses GencDecodeRange, genc_decode_append,
// genc_attn_query_rows and genc_decode_meet); AttentionKernels.cpp emits
// the entry where runtime/cuda/AttentionAbi.h's streamEligible() holds.
#include "codegen/AttentionKernels.h"

namespace genc {

const char *attentionStreamTemplates() {
  return R"(// ---- genc decode attention by TMA (sm_90) ---------------------------------
// Block (t, y, s) of 160 threads: token t, KV head kh = y / DPARTS and its
// query heads [hb, hb + DGROUP), split s of the token's keys (the decode
// kernel's ranges: genc_attn_merge takes either's partials). Warps 0-3
// compute as the tile kernel does (S = Q K^T by ldmatrix from K, P V by
// ldmatrix.trans from V, warp w the tile's keys 16w .. 16w + 15); warp 4's
// first lane is the producer. Shape legend: KT = 64 keys a tile; a stage is
// K then V, each D / 64 boxes of [KT rows][64 dims] (128 bytes a row, TMA's
// 128-byte swizzle: 16-byte chunk c of row r at chunk c ^ (r % 8)); NS
// stages fill kStreamRingBytes. Barriers: full[s] (the producer's bytes
// landed), empty[s] (the 4 warps are done with it), ready (the step's row
// appended, before the producer reads it); the compute warps meet by the
// named barrier 1 (genc_attn_sync), never __syncthreads.
static __device__ __forceinline__ unsigned genc_smem_at(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ void genc_mbar_init(unsigned long long *b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(genc_smem_at(b)), "r"(count) : "memory");
}
static __device__ __forceinline__ void genc_mbar_wait(unsigned long long *b, unsigned parity) {
  asm volatile("{\n .reg .pred P1;\n GENC_WAIT:\n"
               " mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               " @P1 bra GENC_DONE;\n bra GENC_WAIT;\n GENC_DONE:\n }" ::"r"(genc_smem_at(b)), "r"(parity)
               : "memory");
}
static __device__ __forceinline__ void genc_mbar_arrive(unsigned long long *b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(genc_smem_at(b)) : "memory");
}
static __device__ __forceinline__ void genc_mbar_expect(unsigned long long *b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(genc_smem_at(b)), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void genc_tma_rows(void *dst, const GencTensorMap *map, int dim, int row,
                                                     unsigned long long *bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(genc_smem_at(dst)), "l"((unsigned long long)map), "r"(dim), "r"(row), "r"(genc_smem_at(bar))
               : "memory");
}
// Row `row`, 16-byte chunk `chunk` of a swizzled box at shared address `box`.
static __device__ __forceinline__ unsigned genc_swizzled(unsigned box, int row, int chunk) {
  return box + (unsigned)(row * 128 + ((chunk ^ (row & 7)) << 4));
}

template <typename C>
static __device__ void genc_attn_stream(const GencAttnParams &p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  typedef typename C::Cache CT;
  constexpr int D = C::D, G = C::DGROUP, KT = 64, BOXES = D / 64, BOX = KT * 128, HALF = BOXES * BOX;
  constexpr int STAGE = 2 * HALF, NS = (int)(C::SRING / STAGE), KSTEPS = D / 16, NT = D / 8;
  constexpr int DPARTS = C::GROUP_ALL / G, BF16 = C::DMMA == 2;
  static_assert(D % 64 == 0 && G <= 8 && NS >= 2 && !C::SHARED && !C::CROSS_I8 && C::WINDOW == 0,
                "decode attention (TMA): the shape it takes");
  static_assert(4 * 8 * D * 4 <= NS * STAGE, "decode attention (TMA): the ring holds the warps' sums");
  extern __shared__ uint4 genc_attn_tiles[];
  unsigned char *ring = (unsigned char *)(((unsigned long long)genc_attn_tiles + 1023) & ~1023ull);
  float *qs = (float *)(ring + NS * STAGE); // [G][D]
  __shared__ __align__(8) unsigned long long full[NS], empty[NS], ready;
  __shared__ float mW[4][8], lW[4][8], fS[4][8];
  const long long t = blockIdx.x;
  const int kh = blockIdx.y / DPARTS, hb = kh * C::GROUP_ALL + (blockIdx.y % DPARTS) * G;
  const int split = blockIdx.z, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // The places went up before the step's first kernel: readable before the wait.
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  const GencDecodeRange<C, KT> r(p, pl, kh, split, gridDim.z);
  if (split >= r.used) return;
  // cuda.attention_trace stamps (thread 0, a compute thread): 0 entry (the range
  // read), 1 the wait, 3 the append, 4 the queries, 5 tile 0 landed, 6 the
  // last tile, 2 the warps' O rows in the ring, 7 the partials written.
  const int mr = split < 8 ? split : -1;
  genc_attn_mark(mr, 0);
  if (tid == 0) {
    for (int s = 0; s < NS; ++s) {
      genc_mbar_init(&full[s], 1);
      genc_mbar_init(&empty[s], 4);
    }
    genc_mbar_init(&ready, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads(); // the only block-wide barrier: the producer leaves after its loop
  if (warp == 4) {
    if (lane == 0) {
      // The split that appends the step's row reads that row's tile after
      // the compute warps wrote it (genc_decode_append's own test).
      const long long own = genc_shard_row<C>(p, pl.position);
      const bool appends = genc_attn_appends_now<C>(p, pl) && own >= r.a && own < r.b;
      const int ownTile = appends ? (int)((own - r.a) / KT) : r.tiles;
      const int row0 = (int)(r.rowBase + r.a);
      for (int i = 0; i < r.tiles; ++i) {
        const int s = i % NS;
        if (i >= NS) genc_mbar_wait(&empty[s], (unsigned)((i / NS - 1) & 1));
        if (i == ownTile) genc_mbar_wait(&ready, 0u);
        genc_mbar_expect(&full[s], STAGE);
        unsigned char *st = ring + s * STAGE;
#pragma unroll
        for (int b = 0; b < BOXES; ++b) {
          genc_tma_rows(st + b * BOX, &p.kMap, 64 * b, row0 + i * KT, &full[s]);
          genc_tma_rows(st + HALF + b * BOX, &p.vMap, 64 * b, row0 + i * KT, &full[s]);
        }
      }
    }
    return;
  }
  genc_pdl_wait();
  genc_attn_mark(mr, 1);
  genc_pdl_launch();
  // The step's k, v row into the cache (the split holding its position),
  // made visible to the producer's bulk copies (the async proxy).
  if (genc_decode_append<C, KT>(p, t, pl, r, kh)) asm volatile("fence.proxy.async;" ::: "memory");
  genc_attn_sync();
  if (tid == 0) genc_mbar_arrive(&ready);
  genc_attn_mark(mr, 3);
  const int g = lane >> 2, q = lane & 3, mi = lane >> 3, r8 = lane & 7;
  unsigned qa[KSTEPS][2];
  genc_attn_query_rows<C, G>(p, t, hb, qs, pl);
#pragma unroll
  for (int k = 0; k < KSTEPS; ++k)
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int d = k * 16 + x * 8 + 2 * q;
      const float lo = g < G ? qs[g * D + d] : 0.f, hi = g < G ? qs[g * D + d + 1] : 0.f;
      qa[k][x] = (unsigned)CT::st(lo) | ((unsigned)CT::st(hi) << 16);
    }
  genc_attn_mark(mr, 4);
  float o[NT][4];
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int x = 0; x < 4; ++x) o[n][x] = 0.f;
  float m = -__int_as_float(0x7f800000), l = 0.f; // head g, this warp's keys (l: this lane's part)
  const unsigned ringAt = genc_smem_at(ring);
  const int k0 = warp * 16, kKey = k0 + r8 + 8 * (mi >> 1), vKey = k0 + r8 + 8 * (mi & 1);
  for (int i = 0; i < r.tiles; ++i) {
    const int s = i % NS;
    genc_mbar_wait(&full[s], (unsigned)((i / NS) & 1));
    if (i == 0) genc_attn_mark(mr, 5);
    const unsigned kt = ringAt + (unsigned)(s * STAGE), vt = kt + HALF;
    const long long j0 = r.a + (long long)i * KT;
    const int nt = (int)(r.b - j0 < KT ? r.b - j0 : KT);
    // S = Q K^T: ldmatrix.x4 = (keys 0-7, chunk 2k), (0-7, 2k + 1),
    // (8-15, 2k), (8-15, 2k + 1): the B fragments of both 8-key tiles.
    float sc[2][4];
#pragma unroll
    for (int n = 0; n < 2; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x) sc[n][x] = 0.f;
#pragma unroll
    for (int k = 0; k < KSTEPS; ++k) {
      const int chunk = 2 * k + (mi & 1);
      unsigned b0, b1, b2, b3;
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                   : "r"(genc_swizzled(kt + (chunk >> 3) * BOX, kKey, chunk & 7)));
      const unsigned a[4] = {qa[k][0], 0u, qa[k][1], 0u};
      genc_mma16816<BF16>(sc[0], a, b0, b1);
      genc_mma16816<BF16>(sc[1], a, b2, b3);
    }
    // Keys past the split are masked (the next rows, or TMA's zeros past the map).
    const float c = genc_decode_scores<C, G>(p, pl, t, hb, g, q, k0, j0, nt, sc, m, l), mNew = m;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      o[n][0] *= c;
      o[n][1] *= c;
    }
    unsigned pa[4] = {0u, 0u, 0u, 0u}; // P as the A fragment of keys k0 .. k0 + 15
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const float e0 = mNew == -__int_as_float(0x7f800000) ? 0.f : expf(sc[n][0] - mNew);
      const float e1 = mNew == -__int_as_float(0x7f800000) ? 0.f : expf(sc[n][1] - mNew);
      l += e0 + e1;
      pa[2 * n] = (unsigned)CT::st(e0) | ((unsigned)CT::st(e1) << 16);
    }
    // O += P V: ldmatrix.x4.trans = (keys 0-7, chunk 2j), (8-15, 2j),
    // (0-7, 2j + 1), (8-15, 2j + 1): the B fragments of dims 16j .. +15.
#pragma unroll
    for (int j = 0; j < NT / 2; ++j) {
      const int chunk = 2 * j + (mi >> 1);
      unsigned b0, b1, b2, b3;
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
                   : "r"(genc_swizzled(vt + (chunk >> 3) * BOX, vKey, chunk & 7)));
      genc_mma16816<BF16>(o[2 * j], pa, b0, b1);
      genc_mma16816<BF16>(o[2 * j + 1], pa, b2, b3);
    }
    __syncwarp();
    if (lane == 0) genc_mbar_arrive(&empty[s]);
  }
  genc_attn_mark(mr, 6);
  // The warps meet in the ring (every copy landed: each warp waited for
  // every tile): each head's max, its sum, the warps' O rows [4][8][D].
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  genc_attn_sync(); // every warp's last ldmatrix done
  if (q == 0) { mW[warp][g] = m; lW[warp][g] = l; }
  float *ow = (float *)ring;
#pragma unroll
  for (int n = 0; n < NT; ++n) {
    ow[(warp * 8 + g) * D + n * 8 + 2 * q] = o[n][0];
    ow[(warp * 8 + g) * D + n * 8 + 2 * q + 1] = o[n][1];
  }
  genc_attn_mark(mr, 2);
  genc_decode_meet<C, G, true>(p, t, hb, split, r.used, ow, mW, lW, fS);
  genc_attn_mark(mr, 7);
#else
  __trap(); // the executor launches it on sm_90 and newer only
#endif
}
)";
}

} // namespace genc
