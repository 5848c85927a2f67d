// The merge of the decode kernel's splits (Flash-Decoding's second stage):
// the block merge, a block per (token, head), and the merge by rows, a warp
// per (token, head), which sum the same terms in the same order. Pasted after
// attentionDecodeTemplates() (it reuses its block policies and ranges);
// codegen/AttentionKernels.cpp emits the entries, codegen/StepKernel.cpp runs
// the block merge as a step item.
#include "codegen/AttentionKernels.h"

namespace genc {

const char *attentionMergeTemplates() {
  return R"(// ---- merge: the splits' partials of one (token, head) -----------------------
// Block (t, h), C::MTHREADS (kMergeThreads: 512) threads, after the decode kernel (the
// same splits S = p.splits; a token whose keys took one split has its
// output already). Its place and range are read before the wait (the
// places went up before the step's first kernel), so after it the chain is
// two loads deep: the log-sum-exps, then the partials. Weights
// exp(lse_s - max) in shared memory, then SG groups of threads each sum
// every SG-th split over VD-wide columns of the row (SG = 16 at D 128: a
// thread's few loads issued at once), the groups' sums added in group order.
// A warp's share of a (token, head)'s merge weights: lane holds w[i] =
// exp(lse_s - max) of split s = lane + 32 i (0 past `used`); returns their
// sum over the warp and writes its log-sum-exp to lseOut at `row` where asked.
// Both merges weigh here, so they weigh alike, bit for bit.
template <int LPER>
static __device__ __forceinline__ float genc_attn_merge_weights(const GencAttnParams &p, const float *lse, int used,
                                                                long long row, float (&w)[LPER]) {
  const int lane = threadIdx.x & 31;
  float lv[LPER], M = -__int_as_float(0x7f800000);
#pragma unroll
  for (int i = 0; i < LPER; ++i) {
    lv[i] = lane + 32 * i < used ? lse[lane + 32 * i] : -__int_as_float(0x7f800000);
    M = fmaxf(M, lv[i]);
  }
#pragma unroll
  for (int x = 16; x > 0; x >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, x));
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < LPER; ++i) {
    w[i] = lv[i] == -__int_as_float(0x7f800000) ? 0.f : expf(lv[i] - M);
    sum += w[i];
  }
#pragma unroll
  for (int x = 16; x > 0; x >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, x);
  if (lane == 0 && p.lseOut) ((float *)p.lseOut)[row] = sum > 0.f ? M + logf(sum) : -__int_as_float(0x7f800000);
  return sum;
}

template <typename C, typename B = GencHwBlock>
static __device__ void genc_attn_merge(const GencAttnParams &p) {
  typedef typename C::Out O;
  constexpr int D = C::D, KT = C::DKT, SMAX = 256, MT = C::MTHREADS;
  constexpr int VD = D % 4 == 0 ? 4 : 1, COLS = D / VD, SG = MT / COLS;
  static_assert(SG >= 1, "merge: a row in one block");
  __shared__ float wS[SMAX];
  __shared__ float sumS[SG][D];
  __shared__ float lS;
  const long long t = B::x();
  const int h = B::y(), tid = threadIdx.x, lane = tid & 31, S = (int)B::splits(p);
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  const GencDecodeRange<C, KT> r(p, pl, h / C::GROUP_ALL, 0, S);
  genc_pdl_wait();
  genc_attn_mark(9, 2);
  genc_pdl_launch();
  genc_attn_mark(9, 3);
  if (r.used == 1) return;
  const int used = (int)r.used;
  const float *lse = (const float *)p.lse + (t * C::H + h) * (long long)S;
  // The first PRE partials of each group load while warp 0 makes the
  // weights: the step's two round trips (weights, partials) overlap.
  constexpr int PRE = 8, LPER = SMAX / 32;
  const int sg = tid / COLS, col = tid % COLS;
  const float *part = (const float *)p.partial + (t * C::H + h) * (long long)S * D + col * VD;
  float v[PRE][VD];
  if (sg < SG)
#pragma unroll
    for (int i = 0; i < PRE; ++i)
      if (sg + i * SG < used) genc_attn_load<genc_f32, VD>(v[i], part + (long long)(sg + i * SG) * D);
  if (tid < 32) {
    float w[LPER];
    const float sum = genc_attn_merge_weights<LPER>(p, lse, used, t * C::H + h, w);
#pragma unroll
    for (int i = 0; i < LPER; ++i)
      if (lane + 32 * i < used) wS[lane + 32 * i] = w[i];
    if (lane == 0) lS = sum;
  }
  B::msync();
  if (sg < SG) {
    float acc[VD];
#pragma unroll
    for (int x = 0; x < VD; ++x) acc[x] = 0.f;
#pragma unroll
    for (int i = 0; i < PRE; ++i)
      if (sg + i * SG < used)
#pragma unroll
        for (int x = 0; x < VD; ++x) acc[x] += wS[sg + i * SG] * v[i][x];
#pragma unroll 4
    for (int s = sg + PRE * SG; s < used; s += SG) {
      float u[VD];
      genc_attn_load<genc_f32, VD>(u, part + (long long)s * D);
#pragma unroll
      for (int x = 0; x < VD; ++x) acc[x] += wS[s] * u[x];
    }
#pragma unroll
    for (int x = 0; x < VD; ++x) sumS[sg][col * VD + x] = acc[x];
  }
  B::msync();
  for (int d = tid; d < D; d += MT) {
    float o = 0.f;
#pragma unroll
    for (int g = 0; g < SG; ++g) o += sumS[g][d];
    ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, h, d)] = O::st(lS > 0.f ? o / lS : 0.f);
  }
  genc_attn_mark(9, 4);
}

// ---- merge by rows: a warp a (token, head), few splits ------------------------
// The same sums as genc_attn_merge, bit for bit, where a run has many rows
// and each few splits (S <= MRS): at batch 32 the block merge's 1,024 blocks
// of 512 threads took 12.8 µs a layer for 70 KB (H100, Nsight Compute,
// 2026-12-06), a block's fixed stages times two waves. Here a block of
// kMergeThreads holds 16 rows; a lane takes columns lane, lane + 32, ...
// and adds, for each column, the block merge's SG group sums in its order
// (group g holds split g alone when used <= SG), so the output does not
// depend on which merge ran (a request's tokens, not on its batch).
//   grid: ceil(T * H / 16) blocks of kMergeThreads; rows (t, h) = t * H + h
//   partial [T, H, S, D] f32, lse [T, H, S] f32 -> out (t, h, :)
template <typename C, int MRS>
static __device__ void genc_attn_merge_rows(const GencAttnParams &p) {
  typedef typename C::Out O;
  constexpr int D = C::D, KT = C::DKT, SMAX = 256, MT = C::MTHREADS;
  constexpr int VD = D % 4 == 0 ? 4 : 1, COLS = D / VD, SG = MT / COLS, LPER = SMAX / 32, DL = (D + 31) / 32;
  static_assert(SG >= MRS, "merge by rows: a split a group");
  const int lane = threadIdx.x & 31, S = (int)p.splits;
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const bool live = row < p.tokens * C::H;
  const long long t = live ? row / C::H : 0;
  const int h = live ? (int)(row % C::H) : 0;
  const GencTokenPlace pl = ((const GencTokenPlace *)p.places)[t];
  const GencDecodeRange<C, KT> r(p, pl, h / C::GROUP_ALL, 0, S);
  genc_pdl_wait();
  genc_pdl_launch();
  if (!live || r.used == 1 || S > MRS) return;
  const int used = (int)r.used;
  const float *lse = (const float *)p.lse + (t * C::H + h) * (long long)S;
  const float *part = (const float *)p.partial + (t * C::H + h) * (long long)S * D;
  float v[MRS][DL];
#pragma unroll
  for (int s = 0; s < MRS; ++s)
#pragma unroll
    for (int j = 0; j < DL; ++j)
      v[s][j] = s < used && lane + 32 * j < D ? part[(long long)s * D + lane + 32 * j] : 0.f;
  // The weights as the block merge's warp 0 makes them; split s < 32 is lane s's w[0].
  float lw[LPER];
  const float sum = genc_attn_merge_weights<LPER>(p, lse, used, t * C::H + h, lw);
  float w[MRS];
#pragma unroll
  for (int s = 0; s < MRS; ++s) w[s] = __shfl_sync(0xffffffffu, lw[0], s);
#pragma unroll
  for (int j = 0; j < DL; ++j) {
    const int d = lane + 32 * j;
    if (d >= D) break;
    // Group g's sum is round(w_g * v_g) (one split, added to 0); the groups
    // past `used` add +0, which leaves o (never -0) as it is. The intrinsics
    // keep the compiler from contracting the two into one fma.
    float o = 0.f;
#pragma unroll
    for (int g = 0; g < MRS; ++g)
      if (g < used) o = __fadd_rn(o, __fmul_rn(w[g], v[g][j]));
    ((typename O::S *)p.out)[genc_attn_out_at<C>(p, t, h, d)] = O::st(sum > 0.f ? o / sum : 0.f);
  }
}
)";
}

} // namespace genc
