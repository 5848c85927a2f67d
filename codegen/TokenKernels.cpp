#include "codegen/TokenKernels.h"

#include "runtime/cuda/TokenAbi.h"

#include <string>

namespace genc {

namespace {
const char *kSource = R"(
// ---- genc token choice -----------------------------------------------------
// The larger max wins, an equal max the lower index (torch.argmax's first
// index); the sums meet relative to the winner's max. An empty or all -inf
// part has max -inf and adds nothing.
static __device__ __forceinline__ GencGreedyPart genc_greedy_merge(GencGreedyPart a, GencGreedyPart b) {
  if (b.max == -__int_as_float(0x7f800000)) return a;
  if (a.max == -__int_as_float(0x7f800000)) return b;
  if (b.max > a.max || (b.max == a.max && b.index < a.index)) { GencGreedyPart t = a; a = b; b = t; }
  a.sum += b.sum * exp((double)(b.max - a.max));
  return a;
}
static __device__ __forceinline__ GencGreedyPart genc_greedy_shfl(GencGreedyPart a, int o) {
  GencGreedyPart b;
  b.sum = __shfl_xor_sync(0xffffffffu, a.sum, o);
  b.max = __shfl_xor_sync(0xffffffffu, a.max, o);
  b.index = __shfl_xor_sync(0xffffffffu, a.index, o);
  return b;
}
// The warps' (max, first index) or sums meet through `red`, in warp order.
extern "C" __global__ void __launch_bounds__(256) genc_greedy(const GencGreedyParams p) {
  __shared__ float mx[8];
  __shared__ int ix[8];
  __shared__ double sm[8];
  __shared__ int lastS;
  genc_pdl_wait();
  genc_pdl_launch();
  const long long r = blockIdx.x;
  const int k = blockIdx.y, P = gridDim.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long per = (p.vocab + P - 1) / P, v0 = k * per, v1 = v0 + per < p.vocab ? v0 + per : p.vocab;
  const float *x = (const float *)p.logits + r * p.vocab;
  // The part's max and its first index: a strided scan meets a thread's
  // indices in increasing order; then shuffles, then the 8 warps.
  float m = -__int_as_float(0x7f800000);
  int i = 0x7fffffff;
  for (long long v = v0 + tid; v < v1; v += blockDim.x) {
    const float f = x[v];
    if (f > m) { m = f; i = (int)v; }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float bm = __shfl_xor_sync(0xffffffffu, m, o);
    const int bi = __shfl_xor_sync(0xffffffffu, i, o);
    if (bm > m || (bm == m && bi < i)) { m = bm; i = bi; }
  }
  if (lane == 0) { mx[warp] = m; ix[warp] = i; }
  __syncthreads();
  m = mx[0];
  i = ix[0];
  for (int w = 1; w < 8; ++w)
    if (mx[w] > m || (mx[w] == m && ix[w] < i)) { m = mx[w]; i = ix[w]; }
  double s = 0.0;
  if (m != -__int_as_float(0x7f800000))
    for (long long v = v0 + tid; v < v1; v += blockDim.x) s += exp((double)(x[v] - m));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) sm[warp] = s;
  __syncthreads();
  GencGreedyPart mine;
  mine.sum = ((sm[0] + sm[1]) + (sm[2] + sm[3])) + ((sm[4] + sm[5]) + (sm[6] + sm[7]));
  mine.max = m;
  mine.index = i;
  if (P > 1) {
    GencGreedyPart *parts = (GencGreedyPart *)p.parts + r * P;
    if (tid == 0) {
      parts[k] = mine;
      __threadfence();
      unsigned *ticket = (unsigned *)p.tickets + r;
      lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
      if (lastS) *ticket = 0u; // zero again for the next launch
    }
    __syncthreads();
    if (!lastS || warp != 0) return;
    __threadfence();
    // Warp 0 merges: lane l the parts l, l + 32, ... in order, then the
    // lanes by shuffles (a fixed tree: the same bits every time).
    mine.sum = 0.0;
    mine.max = -__int_as_float(0x7f800000);
    mine.index = 0x7fffffff;
    for (int j = lane; j < P; j += 32) {
      GencGreedyPart b;
      b.sum = __ldcg(&parts[j].sum);
      b.max = __ldcg(&parts[j].max);
      b.index = __ldcg(&parts[j].index);
      mine = genc_greedy_merge(mine, b);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mine = genc_greedy_merge(mine, genc_greedy_shfl(mine, o));
  }
  if (tid != 0) return;
  // Every logit -inf (or NaN): token 0, as the host's rule gives.
  const bool none = mine.max == -__int_as_float(0x7f800000);
  ((long long *)p.tokens)[r] = none ? 0 : mine.index;
  ((float *)p.logprobs)[r] = none ? mine.max : -(float)log(mine.sum);
}

// ---- genc beam candidates ---------------------------------------------------
// (value desc, index asc): the host's rule (runtime/BeamChoice.h). A thread
// with nothing offers (-inf, INT_MAX), which every real candidate beats.
static __device__ __forceinline__ bool genc_beam_before(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}
// The block's best of the threads' (v, i), to every thread; rv, ri: 8 each.
static __device__ __forceinline__ void genc_beam_best(float &v, int &i, float *rv, int *ri) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float bv = __shfl_xor_sync(0xffffffffu, v, o);
    const int bi = __shfl_xor_sync(0xffffffffu, i, o);
    if (genc_beam_before(bv, bi, v, i)) { v = bv; i = bi; }
  }
  if (lane == 0) { rv[warp] = v; ri[warp] = i; }
  __syncthreads();
  v = rv[0];
  i = ri[0];
  for (int w = 1; w < 8; ++w)
    if (genc_beam_before(rv[w], ri[w], v, i)) { v = rv[w]; i = ri[w]; }
  __syncthreads();
}
// Block (r, k): part k of row r (at most 2048 logits, 8 a thread). Its best
// K by rounds (each round the block's best untaken element), in order, to
// parts; the last block of the row merges the P lists by rounds over their
// heads (thread j holds list j's).
extern "C" __global__ void __launch_bounds__(256) genc_beam_topk(const GencBeamParams p) {
  __shared__ float val[2048];
  __shared__ float rv[8];
  __shared__ int ri[8];
  __shared__ int lastS;
  genc_pdl_wait();
  genc_pdl_launch();
  const float NEG = -__int_as_float(0x7f800000);
  const long long r = blockIdx.x;
  const int k = blockIdx.y, P = gridDim.y, tid = threadIdx.x, K = (int)p.k;
  const long long per = (p.vocab + P - 1) / P, v0 = k * per, v1 = v0 + per < p.vocab ? v0 + per : p.vocab;
  const int n = v1 > v0 ? (int)(v1 - v0) : 0;
  const float *x = (const float *)p.logits + r * p.vocab;
  // genc_greedy's choice: the row's max and its log-softmax -lse (-inf:
  // every logit -inf, the row stays as it is).
  const float mx = x[((const long long *)p.greedy)[r]];
  const float lse = -((const float *)((const long long *)p.greedy + p.rows))[r];
  const bool none = mx == NEG;
  const GencBeamRow rule = ((const GencBeamRow *)p.rowRules)[r];
  const int *list = (const int *)p.list;
  for (int j = tid; j < n; j += 256) {
    const float f = x[v0 + j];
    val[j] = none ? f : (f - mx) - lse;
  }
  __syncthreads();
  if (rule.penalty != 1.f) // distinct ids: one thread each
    for (int e = rule.penBegin + tid; e < rule.penEnd; e += 256) {
      const long long t = list[e];
      if (t >= v0 && t < v1) {
        const float s = val[t - v0];
        val[t - v0] = s < 0.f ? s * rule.penalty : s / rule.penalty;
      }
    }
  __syncthreads();
  if (rule.force) { // a forced BOS / EOS step: every id -inf but the forced, 0
    for (int j = tid; j < n; j += 256) val[j] = NEG;
    __syncthreads();
    for (int e = rule.forcedBegin + tid; e < rule.forcedEnd; e += 256) {
      const long long t = list[e];
      if (t >= v0 && t < v1) val[t - v0] = 0.f;
    }
    __syncthreads();
  }
  for (int e = rule.banBegin + tid; e < rule.banEnd; e += 256) {
    const long long t = list[e];
    if (t >= v0 && t < v1) val[t - v0] = NEG;
  }
  __syncthreads();
  float mine[8];
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const int j = tid + 256 * q;
    mine[q] = j < n ? val[j] + rule.score : NEG;
  }
  unsigned taken = 0;
  GencBeamCand *parts = (GencBeamCand *)p.parts + (r * P + k) * K;
  for (int c = 0; c < K; ++c) {
    float v = NEG;
    int i = 0x7fffffff;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int j = tid + 256 * q;
      if (j < n && !((taken >> q) & 1u) && genc_beam_before(mine[q], (int)(v0 + j), v, i)) { v = mine[q]; i = (int)(v0 + j); }
    }
    genc_beam_best(v, i, rv, ri);
    if (i != 0x7fffffff && (int)((i - v0) % 256) == tid) taken |= 1u << (int)((i - v0) / 256);
    if (tid == 0) { parts[c].score = v; parts[c].token = i; }
  }
  if (tid == 0) {
    __threadfence();
    unsigned *ticket = (unsigned *)p.tickets + r;
    lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
    if (lastS) *ticket = 0u; // zero again for the next launch
  }
  __syncthreads();
  if (!lastS) return;
  __threadfence();
  // The row's P lists, in shared memory where they fit (val is free now).
  const GencBeamCand *all = (const GencBeamCand *)p.parts + r * P * K, *lists = all;
  if (P * K <= 1024) {
    GencBeamCand *staged = (GencBeamCand *)val;
    for (int e = tid; e < P * K; e += 256) {
      staged[e].score = __ldcg(&all[e].score);
      staged[e].token = __ldcg(&all[e].token);
    }
    __syncthreads();
    lists = staged;
  }
  GencBeamCand *out = (GencBeamCand *)p.out + r * K;
  int head = 0;
  for (int c = 0; c < K; ++c) {
    float v = NEG;
    int i = 0x7fffffff;
    if (tid < P && head < K) {
      v = lists[tid * K + head].score;
      i = lists[tid * K + head].token;
    }
    genc_beam_best(v, i, rv, ri);
    if (tid < P && head < K && i != 0x7fffffff && lists[tid * K + head].token == i) ++head;
    if (tid == 0) { out[c].score = v; out[c].token = i; }
  }
}

// ---- beam reordering: cache rows between slots --------------------------------
extern "C" __global__ void __launch_bounds__(256) genc_kv_copy(const GencKvCopyParams p) {
  genc_pdl_wait();
  genc_pdl_launch();
  const GencKvCopy c = ((const GencKvCopy *)p.copies)[blockIdx.x];
  const long long at = blockIdx.z * p.halfBytes + blockIdx.y * p.headBytes + c.from * p.rowBytes;
  const uint4 *src = (const uint4 *)((const char *)p.in + c.src * p.slotBytes + at);
  uint4 *dst = (uint4 *)((char *)p.out + c.dst * p.slotBytes + at);
  const long long words = c.to > c.from ? (c.to - c.from) * p.rowBytes / 16 : 0;
  for (long long w = threadIdx.x; w < words; w += blockDim.x) dst[w] = src[w];
}
)";
} // namespace

const char *tokenKernelsSource() {
  static const std::string s = std::string("\n") + genrt::cuda::kGencTokenAbiSource + kSource;
  return s.c_str();
}

} // namespace genc
