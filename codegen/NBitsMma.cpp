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

// y[M, N] for up to 16 MR rows on tensor cores.
//   grid (S ceil(N / 64)), block 256 = 8 warps: block x takes columns
//   64 (x / S) .. + 63 over part x % S of K (S = p.split, by the product's
//   shape, never by M), warp w its columns 64 (x / S) + 8w .. + 7.
//   parts: f32 [groups, S, MR, 256, 4]; tickets: u32 [groups], zero.
// The block puts a's rows of CH = 4 rounds (128 k) in shared memory (two
// buffers: the next chunk loads while this one computes), so a comes from
// L2 once per 64 columns — M / 16 of the codes' bytes at 4 bits — where a
// block of 8 columns read it once per 8 (16x the codes at 32 rows). A warp
// runs every round of its part in order, U rounds of codes, scales and zero
// points in flight. In a round lane (g, q) = (lane / 4, lane % 4) takes codes
// 32r + 8q .. + 7 of its column g as B and the same k of rows g and g + 8 of
// each 16-row tile as A: two mma sum one block's 32 products exactly, and
// the block's scales of the lane's D columns (2q, 2q + 1) multiply that
// partial in f32. A warp's columns are its own (no sums between warps);
// where S > 1 each block puts its sums in p.parts and the last of a group's
// blocks to finish (a ticket) adds them in part order, so a row's sums never
// depend on the rows beside it or on which block ends last.
template <typename A, typename S, typename Y, int BITS, int BS, int ZP, int MR>
static __device__ void genc_gemvq_mma(const GencNBitsParams &p) {
  constexpr int WARPS = 8, BLOB = BS * BITS / 8, CH = 4, U = BITS == 4 ? 16 : 8, NCH = U / CH;
  constexpr int AST = CH * 32 + 32; // a chunk row: 128 values and 32 of padding (rows g, g + 1 on other banks)
  typedef typename A::S AS;
  __shared__ uint4 asw[2][16 * MR * AST * sizeof(AS) / 16];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  const long long SP = p.split > 1 ? p.split : 1, group = blockIdx.x / SP, part = blockIdx.x % SP;
  const long long n0 = group * 64 + warp * 8;
  const long long blocks = (p.K + BS - 1) / BS, rounds = (p.K + 31) / 32, chunks = (rounds + CH - 1) / CH;
  const long long c0 = part * chunks / SP, c1 = (part + 1) * chunks / SP; // this block's chunks
  const long long r0 = c0 * CH, r1 = c1 * CH < rounds ? c1 * CH : rounds;  // and rounds
  // columns past N read column N - 1; their sums are not stored
  const long long nb = n0 + g < p.N ? n0 + g : p.N - 1;
  const long long ns0 = n0 + 2 * q < p.N ? n0 + 2 * q : p.N - 1, ns1 = n0 + 2 * q + 1 < p.N ? n0 + 2 * q + 1 : p.N - 1;
  const unsigned char *col = (const unsigned char *)p.codes + nb * blocks * BLOB;
  const typename S::S *sc = (const typename S::S *)p.scales;
  const bool vec = ((p.a | (unsigned long long)(p.K * sizeof(AS))) & 15) == 0;
  float acc[MR][4];
#pragma unroll
  for (int t = 0; t < MR; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
  // The ring: slot u holds the rounds r0 + u, r0 + u + U, ...
  unsigned cr[U][2];
  float s0r[U], s1r[U];
  int zr[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long long r = r0 + u;
    if (r < r1) { // the weights stream before the wait: the kernel before writes only a
      const long long j = (r * 32) / BS;
      genc_nbits_codes<BITS, BS>(col, r, q, cr[u]);
      zr[u] = (int)genc_nbits_zero<S, BITS, ZP>(p, nb, j, blocks);
      s0r[u] = S::ld(sc[ns0 * blocks + j]);
      s1r[u] = S::ld(sc[ns1 * blocks + j]);
    }
  }
  genc_pdl_wait();
  genc_pdl_launch();
  // Thread x loads word x % 16 of chunk row x / 16 + 16 t (t < MR): rows past M are zeros.
  const int lr = threadIdx.x >> 4, lk = (threadIdx.x & 15) * 8;
  if (c0 < c1) {
    AS *as = (AS *)asw[0];
#pragma unroll
    for (int t = 0; t < MR; ++t)
      *(uint4 *)(as + (16 * t + lr) * AST + lk) = genc_nbits_arow<A>(p, 16 * t + lr, r0 * 32 + lk, vec);
  }
  for (long long cc = c0; cc < c1; cc += NCH) {
#pragma unroll
    for (int h = 0; h < NCH; ++h) {
      const long long c = cc + h;
      if (c >= c1) break;
      __syncthreads(); // chunk c is in buffer h % 2; every warp is done with chunk c - 1, whose buffer takes c + 1
      const AS *as = (const AS *)asw[h & 1];
      const bool more = c + 1 < c1;
      uint4 xn[MR];
      if (more)
#pragma unroll
        for (int t = 0; t < MR; ++t) xn[t] = genc_nbits_arow<A>(p, 16 * t + lr, (c + 1) * CH * 32 + lk, vec);
#pragma unroll
      for (int rr = 0; rr < CH; ++rr) {
        const long long r = c * CH + rr;
        if (r >= r1) break;
        const int u = h * CH + rr; // == (r - r0) % U
        const uint4 b = genc_nbits_pairs<A, BITS>(cr[u], zr[u]);
#pragma unroll
        for (int t = 0; t < MR; ++t)
          genc_nbits_tile<A, BITS>(acc[t], *(const uint4 *)(as + (16 * t + g) * AST + rr * 32 + q * 8),
                                   *(const uint4 *)(as + (16 * t + g + 8) * AST + rr * 32 + q * 8), b, s0r[u], s1r[u]);
        const long long rn = r + U; // this slot's next round
        if (rn < r1) {
          const long long j = (rn * 32) / BS;
          genc_nbits_codes<BITS, BS>(col, rn, q, cr[u]);
          zr[u] = (int)genc_nbits_zero<S, BITS, ZP>(p, nb, j, blocks);
          s0r[u] = S::ld(sc[ns0 * blocks + j]);
          s1r[u] = S::ld(sc[ns1 * blocks + j]);
        }
      }
      if (more) {
        AS *an = (AS *)asw[(h + 1) & 1];
#pragma unroll
        for (int t = 0; t < MR; ++t) *(uint4 *)(an + (16 * t + lr) * AST + lk) = xn[t];
      }
    }
  }
  // D element i of tile t at lane: row 16t + g + 8 (i / 2), column n0 + 2q + i % 2.
  if (SP == 1) {
#pragma unroll
    for (int t = 0; t < MR; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long m = 16 * t + g + 8 * (i >> 1), n = n0 + 2 * q + (i & 1);
        if (m < p.M && n < p.N) ((typename Y::S *)p.y)[m * p.N + n] = Y::st(acc[t][i]);
      }
    return;
  }
  constexpr long long PART = MR * WARPS * 32; // float4 a part
  float4 *parts = (float4 *)p.parts + group * SP * PART + threadIdx.x;
#pragma unroll
  for (int t = 0; t < MR; ++t)
    if (16 * t < p.M) __stcg(parts + part * PART + t * WARPS * 32, make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]));
  if (!genc_last_block((unsigned *)p.tickets + group, (unsigned)SP))
    return;
#pragma unroll
  for (int t = 0; t < MR; ++t) {
    if (16 * t >= p.M) break;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    for (long long j = 0; j < SP; ++j) {
      const float4 e = __ldcg(parts + j * PART + t * WARPS * 32);
      v[0] += e.x;
      v[1] += e.y;
      v[2] += e.z;
      v[3] += e.w;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long m = 16 * t + g + 8 * (i >> 1), n = n0 + 2 * q + (i & 1);
      if (m < p.M && n < p.N) ((typename Y::S *)p.y)[m * p.N + n] = Y::st(v[i]);
    }
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
