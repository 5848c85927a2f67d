#include "codegen/NBitsMma.h"

namespace genc {

const char *nbitsMmaPrimitives() {
  return R"(
// ---- genc 4/8-bit tensor-core primitives (device) ---------------------------
static __device__ __forceinline__ unsigned genc_prmt(unsigned x, unsigned y, unsigned s) {
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(y), "r"(s));
  return d;
}
static __device__ __forceinline__ unsigned genc_hsub2(unsigned x, unsigned y) { // f16x2 x - y
  unsigned d;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(x), "r"(y));
  return d;
}
static __device__ __forceinline__ unsigned genc_fbits(float f) {
  unsigned u;
  asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
  return u;
}
)";
}

const char *nbitsMmaTemplate() {
  return R"(
// ---- 4/8-bit weights on tensor cores ------------------------------------------
// The families that have the entry: a in f16 or bf16 (the mma's types),
// blocks of 32 codes or more (a lane's 8 codes and its 3 neighbours' lie in
// one block), no float zero points ((q - z) is then a small integer, exact
// in a's type).
template <typename A> struct genc_nbits_is16 { static constexpr int V = 0; };  // 1 f16, 2 bf16
template <> struct genc_nbits_is16<genc_f16> { static constexpr int V = 1; };
template <> struct genc_nbits_is16<genc_bf16> { static constexpr int V = 2; };
template <typename A, int BITS, int BS, int ZP> struct genc_nbits_mma_ok {
  static constexpr bool V = genc_nbits_is16<A>::V != 0 && BS >= 32 && ZP != 2;
};

// A lane's 8 codes (k0 .. k0 + 7, one block; c[1] only for 8 bits) as four
// pairs of (q - z) in A's type, exactly: 4 bits as (e0, e4), (e1, e5), (e2,
// e6), (e3, e7) — the nibbles' places, no shuffling —, 8 bits as (e0, e1) ..
// (e6, e7). f16 takes 1024 + q from the bit pattern 0x6400 | q and subtracts
// 1024 + z; bf16 the top half of (float)(q - z).
template <typename A, int BITS>
static __device__ __forceinline__ uint4 genc_nbits_pairs(const unsigned (&c)[2], int z) {
  uint4 h;
  if (genc_nbits_is16<A>::V == 1) {
    const unsigned zz = 0x64006400u | ((unsigned)z << 16) | (unsigned)z;
    if (BITS == 4) {
      h.x = genc_hsub2((c[0] & 0x000f000fu) | 0x64006400u, zz);
      h.y = genc_hsub2(((c[0] >> 4) & 0x000f000fu) | 0x64006400u, zz);
      h.z = genc_hsub2(((c[0] >> 8) & 0x000f000fu) | 0x64006400u, zz);
      h.w = genc_hsub2(((c[0] >> 12) & 0x000f000fu) | 0x64006400u, zz);
    } else {
      h.x = genc_hsub2(genc_prmt(c[0], 0x64646464u, 0x4140u), zz);
      h.y = genc_hsub2(genc_prmt(c[0], 0x64646464u, 0x4342u), zz);
      h.z = genc_hsub2(genc_prmt(c[1], 0x64646464u, 0x4140u), zz);
      h.w = genc_hsub2(genc_prmt(c[1], 0x64646464u, 0x4342u), zz);
    }
  } else {
    int e[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      e[i] = BITS == 4 ? (int)((c[0] >> (4 * i)) & 15u) : (int)((c[i >> 2] >> (8 * (i & 3))) & 255u);
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int lo = BITS == 4 ? e[i] : e[2 * i], hi = BITS == 4 ? e[i + 4] : e[2 * i + 1];
      w[i] = (genc_fbits((float)(lo - z)) >> 16) | (genc_fbits((float)(hi - z)) & 0xffff0000u);
    }
    h = make_uint4(w[0], w[1], w[2], w[3]);
  }
  return h;
}

// Row m of a at k0 .. k0 + 7 (zeros past M or K), 8 halves in a word as stored.
template <typename A>
static __device__ __forceinline__ uint4 genc_nbits_arow(const GencNBitsParams &p, long long m, long long k0, bool vec) {
  typedef typename A::S AS;
  alignas(16) AS v[8];
  const AS *row = (const AS *)p.a + m * p.K + k0;
  if (m < p.M && vec && k0 + 8 <= p.K) {
    genc_vload<AS, 8>(v, row);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = m < p.M && k0 + i < p.K ? row[i] : A::st(0.f);
  }
  return *(const uint4 *)v;
}

// A lane's 8 codes of round r (k 32r + 8q ..; one block): c[1] only for 8 bits.
template <int BITS, int BS>
static __device__ __forceinline__ void genc_nbits_codes(const unsigned char *col, long long r, int q, unsigned (&c)[2]) {
  constexpr int BLOB = BS * BITS / 8;
  const long long k = r * 32 + q * 8, j = (r * 32) / BS;
  const unsigned char *w = col + j * BLOB + (k - j * BS) * BITS / 8;
  c[0] = *(const unsigned *)w;
  c[1] = BITS == 8 ? *(const unsigned *)(w + 4) : 0u;
}

// One 16-row tile of a round: a's rows g and g + 8 (xl, xh, 8 values each as
// stored; 4-bit codes take them in the nibbles' order (a0, a4), (a1, a5),
// (a2, a6), (a3, a7)) against the widened codes b, two mma summing the
// block's products, then its scales s0, s1 (columns 2q, 2q + 1) into acc.
template <typename A, int BITS>
static __device__ __forceinline__ void genc_nbits_tile(float (&acc)[4], uint4 xl, uint4 xh, const uint4 &b, float s0,
                                                       float s1) {
  if (BITS == 4) {
    xl = make_uint4(genc_prmt(xl.x, xl.z, 0x5410u), genc_prmt(xl.x, xl.z, 0x7632u), genc_prmt(xl.y, xl.w, 0x5410u),
                    genc_prmt(xl.y, xl.w, 0x7632u));
    xh = make_uint4(genc_prmt(xh.x, xh.z, 0x5410u), genc_prmt(xh.x, xh.z, 0x7632u), genc_prmt(xh.y, xh.w, 0x5410u),
                    genc_prmt(xh.y, xh.w, 0x7632u));
  }
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  genc_mma<A>::run(d, xl.x, xh.x, xl.y, xh.y, b.x, b.y);
  genc_mma<A>::run(d, xl.z, xh.z, xl.w, xh.w, b.z, b.w);
  acc[0] += d[0] * s0;
  acc[1] += d[1] * s1;
  acc[2] += d[2] * s0;
  acc[3] += d[3] * s1;
}

// y[M, N] for 9 to 16 MR rows on tensor cores (grid (ceil(N / 8), ceil(M /
// (16 MR))), block 256): block (x, y) runs columns 8x .. 8x + 7 for rows 16 MR
// y on; its 8 warps split K in rounds of 32 (warp w: rounds w, w + 8, ...).
// In a round lane (g, q) = (lane / 4, lane % 4) takes codes 32r + 8q .. + 7 of
// column 8x + g as B and the same k of rows g and g + 8 of each 16-row tile
// as A: two mma sum one block's 32 products exactly, and the block's scales
// of the lane's D columns (2q, 2q + 1) multiply that partial in f32. The
// warps' sums meet in shared memory, added in warp order.
template <typename A, typename S, typename Y, int BITS, int BS, int ZP, int MR>
static __device__ void genc_gemvq_mma(const GencNBitsParams &p) {
  constexpr int WARPS = 8, BLOB = BS * BITS / 8, U = 4;
  __shared__ float part[WARPS - 1][MR][4][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  const long long n0 = (long long)blockIdx.x * 8, m0 = (long long)blockIdx.y * 16 * MR;
  const long long blocks = (p.K + BS - 1) / BS, rounds = (p.K + 31) / 32;
  // columns past N read column N - 1; their sums are not stored
  const long long nb = n0 + g < p.N ? n0 + g : p.N - 1;
  const long long ns0 = n0 + 2 * q < p.N ? n0 + 2 * q : p.N - 1, ns1 = n0 + 2 * q + 1 < p.N ? n0 + 2 * q + 1 : p.N - 1;
  const unsigned char *col = (const unsigned char *)p.codes + nb * blocks * BLOB;
  const typename S::S *sc = (const typename S::S *)p.scales;
  const bool vec = ((p.a | (unsigned long long)(p.K * sizeof(typename A::S))) & 15) == 0;
  float acc[MR][4];
#pragma unroll
  for (int t = 0; t < MR; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
  bool waited = false;
  for (long long r0 = warp; r0 < rounds; r0 += WARPS * U) {
    unsigned c[U][2] = {};
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long r = r0 + (long long)u * WARPS;
      if (r < rounds)
        genc_nbits_codes<BITS, BS>(col, r, q, c[u]);
    }
    if (!waited) { // the codes stream before the wait: the kernel before writes only a
      genc_pdl_wait();
      genc_pdl_launch();
      waited = true;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long r = r0 + (long long)u * WARPS;
      if (r >= rounds) break;
      const long long k0 = r * 32 + q * 8, j = (r * 32) / BS;
      const uint4 b = genc_nbits_pairs<A, BITS>(c[u], (int)genc_nbits_zero<S, BITS, ZP>(p, nb, j, blocks));
      const float s0 = S::ld(sc[ns0 * blocks + j]), s1 = S::ld(sc[ns1 * blocks + j]);
#pragma unroll
      for (int t = 0; t < MR; ++t) {
        const long long m = m0 + 16 * t + g;
        genc_nbits_tile<A, BITS>(acc[t], genc_nbits_arow<A>(p, m, k0, vec), genc_nbits_arow<A>(p, m + 8, k0, vec), b,
                                 s0, s1);
      }
    }
  }
  if (!waited) {
    genc_pdl_wait();
    genc_pdl_launch();
  }
  if (warp > 0)
#pragma unroll
    for (int t = 0; t < MR; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) part[warp - 1][t][i][lane] = acc[t][i];
  __syncthreads();
  if (warp > 0) return;
#pragma unroll
  for (int t = 0; t < MR; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float v = acc[t][i];
      for (int w = 0; w < WARPS - 1; ++w) v += part[w][t][i][lane];
      const long long m = m0 + 16 * t + g + 8 * (i >> 1), n = n0 + 2 * q + (i & 1);
      if (m < p.M && n < p.N) ((typename Y::S *)p.y)[m * p.N + n] = Y::st(v);
    }
}

// y[M, N] for any M on tensor cores (prefill; grid (ceil(N / 64), ceil(M /
// 64)), block 256): block (x, y) runs a 64 x 64 tile, rows 64y .., columns
// 64x ..; warp w takes columns 64x + 8w .. + 7 over all of K, its four 16-row
// tiles at once. Each round of 32 k, the block's threads first put a's 64
// rows of that round in shared memory (a thread 8 values), so that a is read
// from L2 once per 64 columns rather than once per 8; a round's codes, their
// widening and the scales are as in genc_gemvq_mma.
template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static __device__ void genc_gemvq_mma_tiles(const GencNBitsParams &p) {
  constexpr int BLOB = BS * BITS / 8, AST = 40; // a row of the chunk: 32 values and 8 of padding (banks)
  typedef typename A::S AS;
  __shared__ uint4 asw[64 * AST * sizeof(AS) / 16]; // in words: 16-byte aligned
  AS *as = (AS *)asw;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  const long long n0 = (long long)blockIdx.x * 64 + warp * 8, m0 = (long long)blockIdx.y * 64;
  const long long blocks = (p.K + BS - 1) / BS, rounds = (p.K + 31) / 32;
  const long long nb = n0 + g < p.N ? n0 + g : p.N - 1;
  const long long ns0 = n0 + 2 * q < p.N ? n0 + 2 * q : p.N - 1, ns1 = n0 + 2 * q + 1 < p.N ? n0 + 2 * q + 1 : p.N - 1;
  const unsigned char *col = (const unsigned char *)p.codes + nb * blocks * BLOB;
  const typename S::S *sc = (const typename S::S *)p.scales;
  const bool vec = ((p.a | (unsigned long long)(p.K * sizeof(AS))) & 15) == 0;
  const int lr = threadIdx.x >> 2, lk = (threadIdx.x & 3) * 8; // the chunk's row and k this thread loads
  float acc[4][4];
#pragma unroll
  for (int t = 0; t < 4; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
  // Round r + 1's a and codes load while round r computes.
  unsigned cn[2];
  genc_nbits_codes<BITS, BS>(col, 0, q, cn); // the codes stream before the wait: the kernel before writes only a
  genc_pdl_wait();
  genc_pdl_launch();
  uint4 xn = genc_nbits_arow<A>(p, m0 + lr, lk, vec); // row lr of the chunk
  for (long long r = 0; r < rounds; ++r) {
    __syncthreads(); // every warp is done with the last round's chunk
    *(uint4 *)(as + lr * AST + lk) = xn;
    __syncthreads();
    const unsigned c[2] = {cn[0], cn[1]};
    if (r + 1 < rounds) {
      xn = genc_nbits_arow<A>(p, m0 + lr, (r + 1) * 32 + lk, vec);
      genc_nbits_codes<BITS, BS>(col, r + 1, q, cn);
    }
    const long long j = (r * 32) / BS;
    const uint4 b = genc_nbits_pairs<A, BITS>(c, (int)genc_nbits_zero<S, BITS, ZP>(p, nb, j, blocks));
    const float s0 = S::ld(sc[ns0 * blocks + j]), s1 = S::ld(sc[ns1 * blocks + j]);
#pragma unroll
    for (int t = 0; t < 4; ++t)
      genc_nbits_tile<A, BITS>(acc[t], *(const uint4 *)(as + (16 * t + g) * AST + q * 8),
                               *(const uint4 *)(as + (16 * t + g + 8) * AST + q * 8), b, s0, s1);
  }
#pragma unroll
  for (int t = 0; t < 4; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long m = m0 + 16 * t + g + 8 * (i >> 1), n = n0 + 2 * q + (i & 1);
      if (m < p.M && n < p.N) ((typename Y::S *)p.y)[m * p.N + n] = Y::st(acc[t][i]);
    }
}
)";
}

} // namespace genc
