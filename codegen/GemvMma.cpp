// The tensor-core GEMV templates of 16-bit products (runtime/cuda/GemvAbi.h,
// `<entry>_mma16`, `<entry>_mmaw{16,32,64}`): 2 to 64 rows of a against weights [N, K] of
// a's type on mma.m16n8k16, f32 sums.
#include "codegen/GemvMma.h"

namespace genc {

const char *gemvMmaPrimitives() {
  return R"(
// ---- genc GEMV tensor-core primitives (device) ---------------------------------
// 16 bytes from global to shared memory on the async copy path, zeros where
// !valid; the copies a thread issued since its last commit form a group;
// wait until at most N of its groups are in flight.
static __device__ __forceinline__ void genc_gemv_cp16(void *dst, const void *src, bool valid) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}
static __device__ __forceinline__ void genc_gemv_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void genc_gemv_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
)";
}

const char *gemvMmaTemplates() {
  return R"(// ---- 2 to 16 rows on tensor cores, 32 weight rows a block -----------------------
// y[M, N] = act(a[M, K] . w[N, K]^T + bias) for 16-bit a and w of one type
// (mma.m16n8k16, f32 sums), M <= 16 MR, K a multiple of 32 (the entry
// `_mma16`: MR 1).
//   grid (S ceil(N / 8 CG)) (a GLU: S ceil(N / 2 / 4 CG)), block 256 = 8
//   warps; block x takes group x / S's columns over part x % S of K (S =
//   p.split, 1 to 4; parts and tickets as genc_mma_sums says).
// A block takes CG groups of 8 weight rows (4: GemvAbi.h's kGemvMmaOutputs;
// 8 at 32 rows, with 2 rounds in flight, halved the blocks and lost 15%);
// its 8 warps split K in rounds of 32 (warp w: rounds w, w + 8, ...), so
// each block reads a once (from L2: M / 8 CG of its weight bytes) and has
// 8 x U x CG x 512 bytes of weights in flight (U = 4 rounds a warp, 2 at 64
// rows: registers), and the same rounds of a (loaded with them: its latency
// from L2 is a round's).
// In a round lane (g, q) = (lane / 4, lane % 4) reads 8
// weights at k 32r + 8q of its group's row g as the mma's B column g, and the
// same k of a's rows g and g + 8 of each 16-row tile as A: a dot product does
// not care in what order its k come, so both operands take k in that order
// and each is one 16-byte load. D's (row, column) is (a's row, weight row).
// A GLU (EPI::ROWS == 2) takes gate and up rows alternately as a group's
// columns (column 2j: gate row o + j, 2j + 1: up row NO + o + j), so a lane's
// two D columns are one output's gate and up.
// Where a product has few groups for the SMs (p.split = S > 1, chosen by its
// shape, never by M) S blocks take the same weight rows and split K: warp w
// of part j takes rounds 8j + w, 8j + w + 8S, ... — a 2,048-wide product's
// 64 groups on 128 SMs at S = 2. (In a thread-block cluster, the parts
// added through distributed shared memory, this made the 1.1B's step
// 22-39% slower on an H100: docs/decode-experiments.md.)
// The sums (genc_mma_sums): the warps' partials added in warp order through
// shared memory, then the parts in part order through global memory. A
// row's sums never meet another row's: its y is the same whatever else the
// launch holds.
// One k16 tile of rows g, g + 8 (xl, xh: k 0..7) against b0, b1: half 0
// takes A's words of k 2q.., half 1 the next.
template <typename A> struct genc_gemv_mma_op {
  static __device__ __forceinline__ void run(float (&d)[4], const uint4 &xl, const uint4 &xh, unsigned b0, unsigned b1,
                                             int half) {
    const unsigned a0 = half ? xl.z : xl.x, a1 = half ? xh.z : xh.x, a2 = half ? xl.w : xl.y, a3 = half ? xh.w : xh.y;
    genc_mma<A>::run(d, a0, a1, a2, a3, b0, b1);
  }
};

// Row m of a at k .. k + 7 as stored; zeros past M.
static __device__ __forceinline__ uint4 genc_gemv_mma_arow(const GencGemvParams &p, long long m, long long k) {
  return m < p.M ? *(const uint4 *)((const unsigned short *)p.a + m * p.K + k) : make_uint4(0u, 0u, 0u, 0u);
}

// The sums of the tensor-core GEMV: a block of 8 warps, each holding f32
// partials acc[t][c] of mma.m16n8k16 D tiles (16-row tile t, group c of 8
// columns; CG a multiple of 4) over its own k, added in warp order through
// shared memory. Where S = p.split > 1 blocks split K (block x: columns of
// group x / S, part x % S of K), each block puts its sums in p.parts and the
// last of a group's blocks to finish (a ticket a group in p.tickets, zero
// between launches) adds the S parts in part order: an order set by the
// shapes alone, whichever block comes last.
// store(t, c, s) gets tile t's D elements 2h, 2h + 1 of group c at lane (h =
// threadIdx.x / 32 % 2; thread x takes the groups c = x / 64 + 4v): row 16t
// + lane / 4 + 8h, columns 2 (lane % 4) and + 1 of the group.
//   parts: f32 pairs [groups, S, MR, CG / 4, 256]; tickets: u32 [groups]
template <int MR, int CG, typename F>
static __device__ __forceinline__ void genc_mma_sums(const float (&acc)[MR][CG][4], const GencGemvParams &p, F &&store) {
  constexpr int WARPS = 8, V = CG / 4; // a thread's pairs of D elements a tile
  static_assert(CG % 4 == 0, "four groups a pass of the block's threads");
  __shared__ float part[WARPS][CG][4][32];
  const long long S = p.split > 1 ? p.split : 1, group = blockIdx.x / S;
  const int lane = threadIdx.x & 31, lw = threadIdx.x >> 5, ec = threadIdx.x >> 6, eh = lw & 1;
  float2 *parts = (float2 *)p.parts + group * S * (MR * V * WARPS * 32) + threadIdx.x; // this thread's, part 0
  constexpr long long PART = MR * V * WARPS * 32;                                         // pairs a part
#pragma unroll
  for (int t = 0; t < MR; ++t) {
    if (16 * t >= p.M) break;
    if (t) __syncthreads(); // the last tile's partials are read
#pragma unroll
    for (int c = 0; c < CG; ++c)
#pragma unroll
      for (int i = 0; i < 4; ++i) part[lw][c][i][lane] = acc[t][c][i];
    __syncthreads();
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int c = ec + 4 * v;
      float s[2] = {0.f, 0.f};
#pragma unroll
      for (int w = 0; w < WARPS; ++w) {
        s[0] += part[w][c][2 * eh][lane];
        s[1] += part[w][c][2 * eh + 1][lane];
      }
      if (S == 1)
        store(t, c, s);
      else
        __stcg(parts + blockIdx.x % S * PART + (t * V + v) * WARPS * 32, make_float2(s[0], s[1]));
    }
  }
  if (S == 1)
    return;
  if (!genc_last_block((unsigned *)p.tickets + group, (unsigned)S))
    return;
#pragma unroll
  for (int t = 0; t < MR; ++t) {
    if (16 * t >= p.M) break;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      float s[2] = {0.f, 0.f};
      for (long long j = 0; j < S; ++j) {
        const float2 e = __ldcg(parts + j * PART + (t * V + v) * WARPS * 32);
        s[0] += e.x;
        s[1] += e.y;
      }
      store(t, ec + 4 * v, s);
    }
  }
}

template <typename A, typename W, typename Y, typename B, int BIAS, int ACT, int MR, int CG,
          typename EPI = GencGemvStore>
static __device__ void genc_gemv_mma(const GencGemvParams &p) {
  constexpr int WARPS = 8, U = MR == 4 ? 2 : 4, R = EPI::ROWS;
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int S = p.split > 1 ? (int)p.split : 1; // blocks splitting K
  // warp: this warp's first round; SW: the warps over the group's blocks
  const int warp = (int)(blockIdx.x % S) * WARPS + (threadIdx.x >> 5), SW = S * WARPS;
  const long long NO = p.N / R;                                   // outputs a row
  const long long o0 = (long long)(blockIdx.x / S) * (CG * 8 / R); // the group's first output
  const long long rounds = p.K >> 5;
  const unsigned short *wrow[CG];
#pragma unroll
  for (int c = 0; c < CG; ++c) {
    long long o = o0 + c * (8 / R) + (R == 2 ? (g >> 1) : g);
    o = o < NO ? o : NO - 1; // columns past the outputs read the last one; not stored
    wrow[c] = (const unsigned short *)p.w + (R == 2 && (g & 1) ? NO + o : o) * p.K + q * 8;
  }
  float acc[MR][CG][4];
#pragma unroll
  for (int t = 0; t < MR; ++t)
#pragma unroll
    for (int c = 0; c < CG; ++c)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][c][i] = 0.f;
  // U rounds of weights and of a in flight a warp (slot u: rounds u mod U);
  // the first rounds' weights load before the wait: they stream while the
  // kernel before (whose output is a) finishes.
  uint4 wr[U][CG], xr[U][MR][2];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int c = 0; c < CG; ++c)
      if (warp + u * SW < rounds) wr[u][c] = *(const uint4 *)(wrow[c] + (long long)(warp + u * SW) * 32);
  genc_pdl_wait();
  genc_pdl_launch();
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int t = 0; t < MR; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        xr[u][t][h] = warp + u * SW < rounds
                          ? genc_gemv_mma_arow(p, 16 * t + 8 * h + g, (long long)(warp + u * SW) * 32 + q * 8)
                          : make_uint4(0u, 0u, 0u, 0u);
  for (long long r0 = warp; r0 < rounds; r0 += U * SW) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long r = r0 + (long long)u * SW;
      if (r >= rounds) break;
#pragma unroll
      for (int t = 0; t < MR; ++t)
#pragma unroll
        for (int c = 0; c < CG; ++c) {
          genc_gemv_mma_op<A>::run(acc[t][c], xr[u][t][0], xr[u][t][1], wr[u][c].x, wr[u][c].y, 0);
          genc_gemv_mma_op<A>::run(acc[t][c], xr[u][t][0], xr[u][t][1], wr[u][c].z, wr[u][c].w, 1);
        }
      // This slot's next round: U x SW rounds on.
      const long long rn = r + U * SW;
      if (rn < rounds) {
#pragma unroll
        for (int c = 0; c < CG; ++c) wr[u][c] = *(const uint4 *)(wrow[c] + rn * 32);
#pragma unroll
        for (int t = 0; t < MR; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) xr[u][t][h] = genc_gemv_mma_arow(p, 16 * t + 8 * h + g, rn * 32 + q * 8);
      }
    }
  }
  // The warps' sums, then the group's blocks' (genc_mma_sums): D elements
  // 2h, 2h + 1 of group c and lane.
  const int eh = (threadIdx.x >> 5) & 1, eg = lane >> 2, eq = lane & 3;
  genc_mma_sums<MR, CG>(acc, p, [&](int t, int ec, const float (&s)[2]) {
    const long long m = 16 * t + eg + 8 * eh;
    if (m >= p.M)
      return;
    if (R == 2) {
      const long long o = o0 + ec * 4 + eq;
      if (o < NO) {
        float v[R];
        v[0] = s[0];
        v[R - 1] = s[1];
        EPI::template store<Y, B, BIAS, ACT>(p, o, NO, (int)m, v);
      }
    } else {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const long long n = o0 + ec * 8 + 2 * eq + j;
        float v[R];
        v[0] = s[j];
        if (n < NO) EPI::template store<Y, B, BIAS, ACT>(p, n, NO, (int)m, v);
      }
    }
  });
}


// ---- 2 to 64 rows on tensor cores, 64 weight rows a block -----------------------
// y[M, N] = act(a[M, K] . w[N, K]^T + bias) for 16-bit a and w of one type
// (mma.m16n8k16, f32 sums), M <= 16 MR, K a multiple of 32 (the entries
// `_mmaw16`, `_mmaw32`, `_mmaw64`: MR 1, 2, 4; genc emits them with
// GENC_GEMV_MMA_WIDE=1).
//   grid (S ceil(N / 64)), block 256 = 8 warps: block x takes weight rows
//   64 (x / S) .. + 63 over part x % S of K (S = p.split, by the product's
//   shape, never by M); warp w takes 16 of them (w % 4) over half of the
//   part's rounds of 32 k (w / 4: rounds r0 + w / 4, + 2, ...). A GLU
//   (EPI::ROWS == 2) takes outputs 32 (x / S) .. + 31, a warp 8 of them:
//   its rows g are their gate rows o, rows g + 8 their up rows NO + o, so a
//   lane's D elements 0 and 2 (1 and 3) are one output's pair.
//   parts: f32 [groups, S, 2 MR, 128, 4]; tickets: u32 [groups], zero.
// The weights are the mma's A (16 weight rows, m) and a's rows its B (8 a
// tile, n): B's two registers are one row's, so a lane's 16-byte load of a
// row from shared memory is its B fragment for both k halves of a round,
// with no moves (a as A, the first form of this entry, interleaved rows g
// and g + 8 of a into its fragment: 16 of its 44 SASS instructions a round,
// and it ran at half cuBLASLt's speed at 32 and 64 rows on an H100, bound
// by issue: docs/performance.md run AH). The interleaving moves to the
// weights' registers (rows g, g + 8), meant once for all of a's 8-row
// tiles; in sm_90 SASS ptxas copies some fragments twice (16-20 moves a
// round), and at 32 rows a chunk (a warp's 2 rounds of 1 KiB) is 177
// instructions from one wait to the next, ~89 a KiB, where the first
// form's rounds alone took 88: the chunk's copy addresses and the moves are
// what is left to trim (32-bit copy offsets made it 189: not kept).
// In a round lane (g, q) = (lane / 4, lane % 4) reads 8 weights at k 32r +
// 8q of its rows g and g + 8 and the same k of a's row g of each tile: a
// dot product does not care in what order its k come, so both operands
// take k in that order and each is one 16-byte load (genc_gemv_mma's order).
// a's rows pass through shared memory, read once per 64 weight rows (M / 64
// of the weights' bytes from L2): a ring of NS = 3 chunks of CH rounds (128
// k; 64 at 64 rows, for the ring to fit 48 KiB) that cp.async fills two
// chunks ahead of the one the warps compute. A warp has U rounds of its
// weights in flight (4: 4 KiB a warp, 32 a block; genc's
// GENC_GEMV_MMA_WIDE_ROUNDS=8 at compile time: twice that).
// The sums: each warp's over its rounds in order, then the two warps' of a
// column group (w + 4 onto w, through shared memory), then the blocks'
// parts in part order (where S > 1: the last of a group's blocks, a
// ticket, adds them). Each of those orders is the shape's: a row's sums
// never meet another row's and are the same bits whatever M, MR and the
// launch's other rows.
template <typename A, typename W, typename Y, typename B, int BIAS, int ACT, int MR, typename EPI = GencGemvStore,
          int U = 4>
static __device__ void genc_gemv_mma_wide(const GencGemvParams &p) {
  constexpr int CH = MR == 4 ? 2 : 4, NS = 3, R = EPI::ROWS, NT = 2 * MR;
  constexpr int RPW = CH / 2, NCH = U / RPW; // a warp's rounds a chunk; chunks a turn of its weight slots
  static_assert(U % RPW == 0, "a whole number of chunks of weight rounds in flight");
  constexpr int AST = CH * 32 + 32; // a chunk row: CH rounds and 32 values of padding (rows g, g + 1 on other banks)
  constexpr int ROWS = 16 * MR, WPR = CH * 4, PER = ROWS * WPR / 256; // a chunk's 16-byte words: PER a thread
  static_assert(ROWS * WPR % 256 == 0, "a chunk's words over the block's threads");
  typedef typename A::S AS;
  constexpr int RING = NS * ROWS * AST * (int)sizeof(AS) / 16;  // uint4
  constexpr int RED = 4 * NT * 4 * 32 / 4;                       // uint4: the second warps' sums
  __shared__ uint4 asw[RING > RED ? RING : RED];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wc = warp & 3, kk = warp >> 2, g = lane >> 2,
            q = lane & 3;
  const long long SP = p.split > 1 ? p.split : 1, group = blockIdx.x / SP, part = blockIdx.x % SP;
  const long long NO = p.N / R; // outputs a row (p.N: the weight's rows)
  // This block's rounds: its part of K in units of 4 rounds whatever CH, so
  // that a round's warp (r - r0) % 2 is the same at every MR; then its chunks.
  const long long rounds = p.K >> 5, quads = (rounds + 3) / 4;
  const long long r0 = part * quads / SP * 4, r1e = (part + 1) * quads / SP * 4, r1 = r1e < rounds ? r1e : rounds;
  const long long c0 = r0 / CH, c1 = (r1 + CH - 1) / CH;
  // This lane's weight rows (A's rows g and g + 8); rows past the outputs
  // read the last one and are not stored.
  long long nl, nh;
  if (R == 2) {
    long long o = group * 32 + wc * 8 + g;
    o = o < NO ? o : NO - 1;
    nl = o;
    nh = NO + o;
  } else {
    nl = group * 64 + wc * 16 + g;
    nh = nl + 8;
    nl = nl < NO ? nl : NO - 1;
    nh = nh < NO ? nh : NO - 1;
  }
  const AS *wlo = (const AS *)p.w + nl * p.K + q * 8, *whi = (const AS *)p.w + nh * p.K + q * 8;
  float acc[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
  // The weights' ring: slot u holds this warp's rounds r0 + kk + 2u,
  // + 2U, ...; the first load before the wait: the weights stream while the
  // kernel before (whose output is a) finishes.
  uint4 wl[U], wh[U];
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (r0 + kk + 2 * u < r1) {
      wl[u] = *(const uint4 *)(wlo + (r0 + kk + 2 * u) * 32);
      wh[u] = *(const uint4 *)(whi + (r0 + kk + 2 * u) * 32);
    }
  // Round r + 2U's weights, loaded after round r's mma: walking pointers
  // (an address made from the row each round costs instructions, and the
  // form is bound by issue).
  const AS *nlo = wlo + (r0 + kk + 2 * U) * 32, *nhi = whi + (r0 + kk + 2 * U) * 32;
  genc_pdl_wait();
  genc_pdl_launch();
  // Chunk c into stage s (rows past M and k past K as zeros), then a commit
  // (empty past the part, so the wait's count holds at its end). A thread
  // copies the same rows and words of every chunk; the stages are counted
  // in ints (a 64-bit remainder a chunk was ~30 SASS instructions).
  const AS *asrc[PER]; // this thread's words of chunk 0 (a's row 0 for rows past M)
  int adst[PER];
  bool arow[PER];
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const int e = threadIdx.x + 256 * i, row = e / WPR, w = e % WPR;
    arow[i] = row < p.M;
    asrc[i] = (const AS *)p.a + (arow[i] ? row * p.K : 0) + w * 8;
    adst[i] = row * AST + w * 8;
  }
  auto issue = [&](long long c, int s) {
    if (c < c1) {
      AS *as = (AS *)asw + s * ROWS * AST;
      const long long kc = c * CH * 32;
#pragma unroll
      for (int i = 0; i < PER; ++i) {
        const bool ok = arow[i] && kc + (adst[i] % AST) < p.K;
        genc_gemv_cp16(as + adst[i], ok ? asrc[i] + kc : (const AS *)p.a, ok);
      }
    }
    genc_gemv_cp_commit();
  };
#pragma unroll
  for (int s = 0; s < NS - 1; ++s) issue(c0 + s, s);
  int sc = 0; // chunk c's stage: (c - c0) % NS
  for (long long cc = c0; cc < c1; cc += NCH) {
#pragma unroll
    for (int h = 0; h < NCH; ++h) {
      const long long c = cc + h;
      if (c >= c1) break;
      genc_gemv_cp_wait<NS - 2>(); // this thread's copies of chunk c are in
      __syncthreads();             // and everyone's; every warp is done with chunk c - 1
      issue(c + NS - 1, sc == 0 ? NS - 1 : sc - 1); // into chunk c - 1's stage
      const AS *as = (const AS *)asw + sc * ROWS * AST;
      sc = sc == NS - 1 ? 0 : sc + 1;
#pragma unroll
      for (int j = 0; j < RPW; ++j) {
        const int rr = kk + 2 * j;
        const long long r = c * CH + rr;
        if (r >= r1) break;
        const int u = h * RPW + j; // this warp's round (r - r0 - kk) / 2, mod U
        // The round's A fragments (k halves 0 and 1: rows g, g + 8 interleaved),
        // made once for all of a's tiles; tiles past M are zeros in the ring,
        // computed rather than branched around.
        const unsigned f0[4] = {wl[u].x, wh[u].x, wl[u].y, wh[u].y}, f1[4] = {wl[u].z, wh[u].z, wl[u].w, wh[u].w};
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const uint4 x = *(const uint4 *)(as + (8 * t + g) * AST + rr * 32 + q * 8);
          genc_mma<A>::run(acc[t], f0[0], f0[1], f0[2], f0[3], x.x, x.y);
          genc_mma<A>::run(acc[t], f1[0], f1[1], f1[2], f1[3], x.z, x.w);
        }
        if (r + 2 * U < r1) {
          wl[u] = *(const uint4 *)nlo;
          wh[u] = *(const uint4 *)nhi;
        }
        nlo += 64;
        nhi += 64;
      }
    }
  }
  // The second warps' sums onto the first's (the ring is free: every copy
  // landed, every warp past its last chunk).
  genc_gemv_cp_wait<0>();
  __syncthreads();
  float *red = (float *)asw + wc * NT * 4 * 32 + lane; // [wc][t][i][lane]
  if (kk == 1) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) red[(t * 4 + i) * 32] = acc[t][i];
  }
  __syncthreads();
  if (kk == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][i] += red[(t * 4 + i) * 32];
  }
  // D element i of tile t at lane: weight row g + 8 (i / 2) of the warp's
  // 16, a's row 8t + 2q + i % 2.
  auto store = [&](int t, const float (&d)[4]) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const long long m = 8 * t + 2 * q + j;
      if (m >= p.M) continue;
      if (R == 2) {
        const long long o = group * 32 + wc * 8 + g;
        float v[R];
        v[0] = d[j];
        v[R - 1] = d[2 + j];
        if (o < NO) EPI::template store<Y, B, BIAS, ACT>(p, o, NO, (int)m, v);
      } else {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const long long n = group * 64 + wc * 16 + g + 8 * hh;
          float v[R];
          v[0] = d[2 * hh + j];
          if (n < NO) EPI::template store<Y, B, BIAS, ACT>(p, n, NO, (int)m, v);
        }
      }
    }
  };
  if (SP == 1) {
    if (kk == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t)
        if (8 * t < p.M) store(t, acc[t]);
    }
    return;
  }
  constexpr long long PART = NT * 128; // float4 a part
  float4 *parts = (float4 *)p.parts + group * SP * PART + wc * 32 + lane;
  if (kk == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (8 * t < p.M) __stcg(parts + part * PART + t * 128, make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]));
  }
  if (!genc_last_block((unsigned *)p.tickets + group, (unsigned)SP) || kk != 0)
    return;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (8 * t >= p.M) break;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    for (long long j = 0; j < SP; ++j) {
      const float4 e = __ldcg(parts + j * PART + t * 128);
      v[0] += e.x;
      v[1] += e.y;
      v[2] += e.z;
      v[3] += e.w;
    }
    store(t, v);
  }
}
)";
}

} // namespace genc
