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
// (value desc, index asc): the host's rule (runtime/choice/Beams.h). A thread
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
// A row's edits (GencEdits; runtime/choice/Beams.h's applyRowEdits, in its
// order) on part [v0, v1) of it, staged in val[0, n): each list's ids that
// fall in the part, one thread each (the bias, penalty and decay lists are
// distinct ids). Rounded ops throughout: no contraction into an fma, so the
// bits are the host's. Block-uniform; ends synchronised.
static __device__ void genc_row_edits(float *val, long long v0, long long v1, int n, const GencEdits &e,
                                      const int *list) {
  const int tid = threadIdx.x;
  for (int i = e.biasBegin + 2 * tid; i + 1 < e.biasEnd; i += 512) {
    const long long t = list[i];
    if (t >= v0 && t < v1) val[t - v0] = __fadd_rn(val[t - v0], __int_as_float(list[i + 1]));
  }
  __syncthreads();
  if (e.encoderPenalty != 1.f)
    for (int i = e.encBegin + tid; i < e.encEnd; i += 256) {
      const long long t = list[i];
      if (t >= v0 && t < v1) { const float s = val[t - v0]; val[t - v0] = s < 0.f ? __fmul_rn(s, e.encoderPenalty) : __fdiv_rn(s, e.encoderPenalty); }
    }
  __syncthreads();
  if (e.penalty != 1.f)
    for (int i = e.penBegin + tid; i < e.penEnd; i += 256) {
      const long long t = list[i];
      if (t >= v0 && t < v1) { const float s = val[t - v0]; val[t - v0] = s < 0.f ? __fmul_rn(s, e.penalty) : __fdiv_rn(s, e.penalty); }
    }
  __syncthreads();
  if (e.force) { // a forced BOS / EOS step: every id -inf but the forced, 0
    for (int j = tid; j < n; j += 256) val[j] = -__int_as_float(0x7f800000);
    __syncthreads();
    for (int i = e.forcedBegin + tid; i < e.forcedEnd; i += 256) {
      const long long t = list[i];
      if (t >= v0 && t < v1) val[t - v0] = 0.f;
    }
    __syncthreads();
  }
  for (int i = e.decayBegin + tid; i < e.decayEnd; i += 256) {
    const long long t = list[i];
    if (t >= v0 && t < v1) { const float s = val[t - v0]; val[t - v0] = __fadd_rn(s, isfinite(s) ? __fmul_rn(fabsf(s), e.decayScale) : 0.f); }
  }
  __syncthreads();
  for (int i = e.banBegin + tid; i < e.banEnd; i += 256) {
    const long long t = list[i];
    if (t >= v0 && t < v1) val[t - v0] = -__int_as_float(0x7f800000);
  }
  __syncthreads();
}
// Block (r, k)'s part [v0, v1) of rule r's row into val[0, n): the
// log-softmax of logits row r / share (genc_greedy's max and -lse; a row of
// -inf stays as it is), then the rule's edits. Ends synchronised.
static __device__ void genc_beam_stage(const GencBeamParams &p, long long r, long long v0, long long v1, int n,
                                       const GencBeamRow &rule, float *val) {
  const long long row = r / p.share;
  const float *x = (const float *)p.logits + row * p.vocab;
  const float mx = x[((const long long *)p.greedy)[row]];
  const float lse = -((const float *)((const long long *)p.greedy + p.rows))[row];
  const bool none = mx == -__int_as_float(0x7f800000);
  for (int j = threadIdx.x; j < n; j += 256) {
    const float f = x[v0 + j];
    val[j] = none ? f : (f - mx) - lse;
  }
  __syncthreads();
  genc_row_edits(val, v0, v1, n, rule.e, (const int *)p.list);
}
// renormalize_logits: the edited row's max and log-sum-exp, as genc_greedy
// finds the raw row's (a part's max, its sum of exp in f64 relative to it;
// the parts merged in order by the rule's last block), into p.norm.
extern "C" __global__ void __launch_bounds__(256) genc_beam_norm(const GencBeamParams p) {
  __shared__ float val[2048];
  __shared__ float mx[8];
  __shared__ double sm[8];
  __shared__ int lastS;
  genc_pdl_wait();
  genc_pdl_launch();
  const float NEG = -__int_as_float(0x7f800000);
  const long long r = blockIdx.x;
  const int k = blockIdx.y, P = gridDim.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const GencBeamRow rule = ((const GencBeamRow *)p.rowRules)[r];
  if (!rule.renormalize) return; // block-uniform: this rule's tickets stay zero
  const long long per = (p.vocab + P - 1) / P, v0 = k * per, v1 = v0 + per < p.vocab ? v0 + per : p.vocab;
  const int n = v1 > v0 ? (int)(v1 - v0) : 0;
  genc_beam_stage(p, r, v0, v1, n, rule, val);
  float m = NEG;
  for (int j = tid; j < n; j += 256) m = fmaxf(m, val[j]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) mx[warp] = m;
  __syncthreads();
  m = mx[0];
  for (int w = 1; w < 8; ++w) m = fmaxf(m, mx[w]);
  double s = 0.0;
  if (m != NEG)
    for (int j = tid; j < n; j += 256) s += exp((double)(val[j] - m));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) sm[warp] = s;
  __syncthreads();
  GencGreedyPart mine;
  mine.sum = ((sm[0] + sm[1]) + (sm[2] + sm[3])) + ((sm[4] + sm[5]) + (sm[6] + sm[7]));
  mine.max = m;
  mine.index = 0;
  GencGreedyPart *parts = (GencGreedyPart *)p.normParts + r * P;
  if (tid == 0) {
    parts[k] = mine;
    __threadfence();
    unsigned *ticket = (unsigned *)p.tickets + r;
    lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
    if (lastS) *ticket = 0u; // zero again for genc_beam_topk
  }
  __syncthreads();
  if (!lastS || warp != 0) return;
  __threadfence();
  mine.sum = 0.0;
  mine.max = NEG;
  mine.index = 0;
  for (int j = lane; j < P; j += 32) {
    GencGreedyPart b;
    b.sum = __ldcg(&parts[j].sum);
    b.max = __ldcg(&parts[j].max);
    b.index = 0;
    mine = genc_greedy_merge(mine, b);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mine = genc_greedy_merge(mine, genc_greedy_shfl(mine, o));
  if (lane == 0) {
    ((float *)p.norm)[2 * r] = mine.max;
    ((float *)p.norm)[2 * r + 1] = mine.max == NEG ? 0.f : (float)log(mine.sum);
  }
}
// Block (r, k): part k of rule r's row (at most 2048 logits, 8 a thread).
// Its best K by rounds (each round the block's best untaken element), in
// order, to parts; the last block of the rule merges the P lists by rounds
// over their heads (thread j holds list j's).
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
  const GencBeamRow rule = ((const GencBeamRow *)p.rowRules)[r];
  genc_beam_stage(p, r, v0, v1, n, rule, val);
  // renormalize_logits: (x - max) - lse of the edited row (all -inf: as it is).
  float nmx = NEG, nlse = 0.f;
  if (rule.renormalize) { nmx = ((const float *)p.norm)[2 * r]; nlse = ((const float *)p.norm)[2 * r + 1]; }
  const bool renorm = rule.renormalize && nmx != NEG;
  float mine[8];
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const int j = tid + 256 * q;
    mine[q] = j < n ? (renorm ? (val[j] - nmx) - nlse : val[j]) + rule.score : NEG;
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

// ---- an i8 cross cache: one warp a row -----------------------------------------
// Block (p, kh): source position segStart + p of KV head kh. The same
// arithmetic as the CPU's int8RowStore: max |x| over the finite values,
// s = max / 127, code = rint(x / s) (IEEE division) clamped to +-127.
extern "C" __global__ void __launch_bounds__(32) genc_cross_store_i8(const GencCrossStoreParams p) {
  genc_pdl_wait();
  genc_pdl_launch();
  const long long pos = blockIdx.x, kh = blockIdx.y;
  const long long at = (kh * p.srcTokens + p.segStart + pos) * p.D;
  auto value = [&](int d) {
    if (p.srcBytes == 4) return ((const float *)p.src)[at + d];
    const unsigned short h = ((const unsigned short *)p.src)[at + d];
    return p.bf16 ? genc_bf2f(h) : genc_h2f(h);
  };
  float amax = 0.f;
  for (int d = threadIdx.x; d < p.D; d += 32) {
    const float x = value(d);
    if (isfinite(x)) amax = fmaxf(amax, fabsf(x));
  }
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float s = __fdiv_rn(amax, 127.f);
  const long long row = kh * p.capacity + pos;
  signed char *codes = (signed char *)p.codes + row * p.D;
  for (int d = threadIdx.x; d < p.D; d += 32) {
    float q = s > 0.f ? rintf(__fdiv_rn(value(d), s)) : 0.f;
    q = q != q ? 0.f : fminf(127.f, fmaxf(-127.f, q));
    codes[d] = (signed char)q;
  }
  if (threadIdx.x == 0) ((float *)p.scales)[row] = s;
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
// Greedy with listed-token processors and sampling (genc_token_pass): a
// kernel the executor looks up optionally (plans without it choose on the
// host), so adding it changes no existing kernel's contract.
const char *kChooseSource = R"(
// ---- genc token choice with processors and warpers (runtime/choice/Sampling.h) --
// The row's float keys: larger values, larger keys; -0.0 is +0.0.
static __device__ __forceinline__ unsigned genc_tok_key(float f) {
  const unsigned u = __float_as_uint(f == 0.f ? 0.f : f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
// Top-p keeps a token when the quantized mass before it (descending order)
// is 0 (the first) or leaves float(cumulative) > float(1 - top_p).
static __device__ __forceinline__ bool genc_tok_keep_p(unsigned long long qtot, unsigned long long before, float thr) {
  return before == 0ull || __double2float_rn((double)(qtot - before) * 0x1p-62) > thr;
}
static __device__ __forceinline__ unsigned long long genc_tok_mass(double w, double sum) {
  return (unsigned long long)((double)__double2float_rn(w / sum) * 4611686018427387904.0);
}
// Whether token (x, v) survives the warpers up to `level`: 1 top-k, 2 and
// top-p, 3 and min-p.
static __device__ __forceinline__ bool genc_tok_kept(const GencTokenRow &rr, const GencTokenState &st, float x,
                                                     long long v, int level) {
  const unsigned key = genc_tok_key(x);
  if (key < st.kKey) return false;
  if (level >= 2 && (key < st.pKey || (key == st.pKey && v < st.pIdx))) return false;
  if (level >= 3 && (rr.flags & 8) &&
      __double2float_rn(exp((double)__fsub_rn(x, st.max)) / st.minS) < st.scaled) return false;
  return true;
}
// The block's f64 sum of its threads' s: shuffles, then the 8 warps in a
// fixed tree; to every thread.
static __device__ __forceinline__ double genc_tok_block_sum(double s, double *red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  __syncthreads();
  if (lane == 0) red[warp] = s;
  __syncthreads();
  return ((red[0] + red[1]) + (red[2] + red[3])) + ((red[4] + red[5]) + (red[6] + red[7]));
}

extern "C" __global__ void __launch_bounds__(256) genc_token_pass(const GencTokenParams p) {
  __shared__ unsigned long long hm[2048]; // masses (top-p); the prep pass's staged part
  __shared__ unsigned hc[2048];           // counts
  __shared__ unsigned long long cm[256];
  __shared__ unsigned cc[256];
  __shared__ double red[8], ps[256];
  __shared__ float mxs[8];
  __shared__ int ixs[8];
  __shared__ int lastS;
  __shared__ long long pick;
  __shared__ double rem;
  genc_pdl_wait();
  genc_pdl_launch();
  const float NEG = -__int_as_float(0x7f800000);
  const long long r = blockIdx.x;
  const int k = blockIdx.y, P = gridDim.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, pass = p.pass;
  const long long V = p.vocab, per = (V + P - 1) / P, v0 = k * per, v1 = v0 + per < V ? v0 + per : V;
  const int n = v1 > v0 ? (int)(v1 - v0) : 0;
  const GencTokenRow rr = ((const GencTokenRow *)p.rowRules)[r];
  GencTokenState *stp = (GencTokenState *)p.state + r;
  const GencTokenState st = *stp; // the earlier passes' (this pass's last block writes it after every block read it)
  float *work = (float *)p.work + r * V;
  long long *tokens = (long long *)p.choice;
  float *logprobs = (float *)(tokens + p.rows);
  unsigned *ghc = (unsigned *)p.hist + r * 2048;
  unsigned long long *ghm = (unsigned long long *)((unsigned *)p.hist + p.rows * 2048) + r * 2048;
  GencGreedyPart *parts = (GencGreedyPart *)p.parts + r * P;
  const int *list = (const int *)p.list;

  // Which passes this row runs (every block of the row decides alike).
  if (pass != 0) {
    if (st.max == NEG) return; // every logit -inf: the prep pass chose token 0
    if (pass >= 1 && pass <= 3 && !(rr.flags & 2)) return;
    if (pass >= 4 && pass <= 9 && !(rr.flags & 4)) return;
    if (pass >= 8 && pass <= 9 && st.need == 0) return;
    if (pass == 10 && !(rr.flags & 8)) return;
  }

  if (pass == 0) {
    // ---- prep: the edits on the raw logits, temperature, into `work` ----
    float *val = (float *)hm;
    const float *x = (const float *)p.logits + r * V;
    for (int j = tid; j < n; j += 256) val[j] = x[v0 + j];
    __syncthreads();
    genc_row_edits(val, v0, v1, n, rr.e, list);
    const bool temper = (rr.flags & 1) && (rr.flags & 16);
    float m = NEG;
    int i = 0x7fffffff;
    for (int j = tid; j < n; j += 256) {
      const float f = temper ? __fdiv_rn(val[j], rr.temperature) : val[j];
      val[j] = f;
      work[v0 + j] = f;
      if (f > m) { m = f; i = (int)(v0 + j); }
    }
    // genc_greedy's part: the max and its first index, then the sum.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float bm = __shfl_xor_sync(0xffffffffu, m, o);
      const int bi = __shfl_xor_sync(0xffffffffu, i, o);
      if (bm > m || (bm == m && bi < i)) { m = bm; i = bi; }
    }
    if (lane == 0) { mxs[warp] = m; ixs[warp] = i; }
    __syncthreads();
    m = mxs[0];
    i = ixs[0];
    for (int w = 1; w < 8; ++w)
      if (mxs[w] > m || (mxs[w] == m && ixs[w] < i)) { m = mxs[w]; i = ixs[w]; }
    double s = 0.0;
    if (m != NEG)
      for (int j = tid; j < n; j += 256) s += exp((double)(val[j] - m));
    GencGreedyPart mine;
    mine.sum = genc_tok_block_sum(s, red);
    mine.max = m;
    mine.index = i;
    if (tid == 0) {
      parts[k] = mine;
      __threadfence();
      unsigned *ticket = (unsigned *)p.tickets + r;
      lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
      if (lastS) *ticket = 0u;
    }
    __syncthreads();
    if (!lastS || warp != 0) return;
    __threadfence();
    mine.sum = 0.0;
    mine.max = NEG;
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
    if (lane != 0) return;
    const bool none = mine.max == NEG;
    GencTokenState ns;
    ns.sum = mine.sum;
    ns.minS = mine.sum;
    ns.above = 0ull;
    ns.qtot = 0ull;
    ns.need = 0;
    ns.max = mine.max;
    ns.scaled = 0.f;
    ns.argmax = none ? 0 : mine.index;
    ns.pIdx = 0;
    ns.kKey = 0u;
    ns.pKey = 0u;
    ns.prefix = 0u;
    ns.pad = 0u;
    *stp = ns;
    if (!(rr.flags & 1) || none) { // greedy's choice (a row of -inf: token 0, -inf)
      tokens[r] = none ? 0 : mine.index;
      logprobs[r] = none ? NEG : -(float)log(mine.sum);
    }
    return;
  }

  if ((pass >= 1 && pass <= 3) || (pass >= 5 && pass <= 9)) {
    // ---- a radix select pass: a histogram of one digit of the keys (or
    // indices) under the prefix found so far, then the last block picks the
    // digit ----
    const bool topk = pass <= 3, topp = pass >= 5 && pass <= 7, idx = pass >= 8;
    const int d = topk ? pass - 1 : topp ? pass - 5 : pass - 8;
    const int shift = idx ? (d == 0 ? 11 : 0) : (d == 0 ? 21 : d == 1 ? 10 : 0);
    const int width = idx ? 11 : (d == 2 ? 10 : 11);
    const int hi = shift + width; // bits above the digit: the prefix's
    for (int b = tid; b < 2048; b += 256) { hc[b] = 0u; hm[b] = 0ull; }
    __syncthreads();
    for (long long v = v0 + tid; v < v1; v += 256) {
      const float x = work[v];
      const unsigned key = genc_tok_key(x);
      unsigned field;
      if (idx) {
        if (key != st.pKey) continue;
        field = (unsigned)v;
      } else {
        if (topp && key < st.kKey) continue;
        field = key;
      }
      if (d > 0 && (field >> hi) != (st.prefix >> hi)) continue;
      const unsigned b = (field >> shift) & ((1u << width) - 1u);
      atomicAdd(&hc[b], 1u);
      if (topp) {
        const unsigned long long q = genc_tok_mass(exp((double)__fsub_rn(x, st.max)), st.sum);
        if (q) atomicAdd(&hm[b], q);
      }
    }
    __syncthreads();
    for (int b = tid; b < 2048; b += 256) {
      if (hc[b]) atomicAdd(&ghc[b], hc[b]);
      if (hm[b]) atomicAdd(&ghm[b], hm[b]);
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      __threadfence();
      unsigned *ticket = (unsigned *)p.tickets + r;
      lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
      if (lastS) *ticket = 0u;
    }
    __syncthreads();
    if (!lastS) return;
    __threadfence();
    for (int b = tid; b < 2048; b += 256) {
      hc[b] = __ldcg(&ghc[b]);
      hm[b] = topp ? __ldcg(&ghm[b]) : 0ull;
      ghc[b] = 0u;
      if (topp) ghm[b] = 0ull;
    }
    __syncthreads();
    {
      unsigned c = 0u;
      unsigned long long q = 0ull;
      for (int b = tid * 8; b < tid * 8 + 8; ++b) { c += hc[b]; q += hm[b]; }
      cc[tid] = c;
      cm[tid] = q;
    }
    __syncthreads();
    if (tid != 0) return;
    GencTokenState ns = st;
    int digit = 0;
    if (!topp) {
      // The need-th largest (counting from 1): bins from the top.
      const unsigned long long need = (unsigned long long)(topk ? rr.topK : st.need);
      unsigned long long a = st.above;
      int c = 255;
      for (; c > 0; --c) {
        if (a + cc[c] >= need) break;
        a += cc[c];
      }
      int b = c * 8 + 7;
      for (; b > c * 8; --b) {
        if (a + hc[b] >= need) break;
        a += hc[b];
      }
      digit = b;
      ns.above = a;
    } else {
      // The lowest nonempty bin whose tokens' mass before them still keeps
      // the first of them (monotone: the mass only grows downwards).
      unsigned long long qtot = st.qtot;
      if (d == 0) {
        qtot = 0ull;
        for (int c = 0; c < 256; ++c) qtot += cm[c];
      }
      ns.qtot = qtot;
      unsigned long long Q = st.above, bestQ = st.above;
      int best = 255;
      for (int c = 255; c >= 0; --c) {
        if (cc[c] == 0u) continue;
        if (!genc_tok_keep_p(qtot, Q, rr.topPThreshold)) break;
        best = c;
        bestQ = Q;
        Q += cm[c];
      }
      Q = bestQ;
      int bb = best * 8 + 7;
      unsigned long long bbQ = bestQ;
      for (int b = best * 8 + 7; b >= best * 8; --b) {
        if (hc[b] == 0u) continue;
        if (!genc_tok_keep_p(qtot, Q, rr.topPThreshold)) break;
        bb = b;
        bbQ = Q;
        Q += hm[b];
      }
      digit = bb;
      ns.above = bbQ;
    }
    ns.prefix = st.prefix | ((unsigned)digit << shift);
    if (topk && d == 2) { ns.kKey = ns.prefix; ns.prefix = 0u; ns.above = 0ull; }
    if (topp && d == 2) {
      // The boundary key's tie: its tokens in descending order (the higher
      // index first) have mass before them above + j * each; keep the
      // first `m` that still pass.
      ns.pKey = ns.prefix;
      const unsigned long long cnt = hc[digit], each = cnt ? hm[digit] / cnt : 0ull;
      unsigned long long lo = 1, hi2 = cnt; // keep(j = lo - 1) holds
      while (lo < hi2) {
        const unsigned long long mid = (lo + hi2 + 1) / 2;
        if (genc_tok_keep_p(ns.qtot, ns.above + (mid - 1) * each, rr.topPThreshold)) lo = mid; else hi2 = mid - 1;
      }
      ns.need = lo < cnt ? (long long)lo : 0; // all of the tie kept: no index select
      ns.pIdx = 0;
      ns.prefix = 0u;
      ns.above = 0ull;
    }
    if (idx && d == 1) { ns.pIdx = (int)ns.prefix; ns.need = 0; ns.prefix = 0u; ns.above = 0ull; }
    *stp = ns;
    return;
  }

  // ---- a sum pass over the kept set (4: top-k's, 10: and top-p's, 11: all,
  // then the draw) ----
  const int level = pass == 4 ? 1 : pass == 10 ? 2 : 3;
  double s = 0.0;
  for (long long v = v0 + tid; v < v1; v += 256) {
    const float x = work[v];
    if (genc_tok_kept(rr, st, x, v, level)) s += exp((double)__fsub_rn(x, st.max));
  }
  s = genc_tok_block_sum(s, red);
  if (tid == 0) {
    parts[k].sum = s;
    __threadfence();
    unsigned *ticket = (unsigned *)p.tickets + r;
    lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
    if (lastS) *ticket = 0u;
  }
  __syncthreads();
  if (!lastS) return;
  __threadfence();
  for (int j = tid; j < P; j += 256) ps[j] = __ldcg(&parts[j].sum);
  __syncthreads();
  if (tid == 0) {
    double W = 0.0;
    for (int j = 0; j < P; ++j) W += ps[j];
    if (pass == 4) {
      stp->sum = W;
    } else if (pass == 10) {
      stp->minS = W;
      stp->scaled = __fmul_rn(rr.minP, __double2float_rn(1.0 / W));
    } else {
      // The draw: the part where the cumulative weight passes u * W (the
      // parts in order), then the remainder inside it.
      const double target = rr.u * W;
      double cum = 0.0;
      int kk = -1, lastPos = -1;
      for (int j = 0; j < P; ++j) {
        if (ps[j] > 0.0) lastPos = j;
        if (ps[j] > 0.0 && cum + ps[j] > target) { kk = j; break; }
        cum += ps[j];
      }
      pick = kk < 0 ? lastPos : kk;
      // Rounding left the target past every part: the last positive part's
      // last positive token (no remainder is reached).
      rem = kk < 0 ? __longlong_as_double(0x7ff0000000000000LL) : target - cum;
      red[0] = W;
    }
  }
  if (pass != 11) return;
  __syncthreads();
  const long long kk = pick;
  const double W = red[0];
  if (kk < 0) { // nothing drawable (the prep pass caught a row of -inf)
    if (tid == 0) { tokens[r] = 0; logprobs[r] = NEG; }
    return;
  }
  // Part kk: each thread 8 consecutive tokens' weights, then thread 0 walks
  // the threads' sums and the crossing thread's tokens in index order.
  const long long a0 = kk * per, a1 = a0 + per < V ? a0 + per : V;
  double t8 = 0.0;
  for (long long v = a0 + tid * 8; v < a0 + tid * 8 + 8 && v < a1; ++v) {
    const float x = work[v];
    if (genc_tok_kept(rr, st, x, v, 3)) t8 += exp((double)__fsub_rn(x, st.max));
  }
  ps[tid] = t8;
  __syncthreads();
  if (tid != 0) return;
  const double target = rem;
  double cum = 0.0;
  long long tok = -1;
  int lastT = -1;
  for (int t = 0; t < 256 && tok < 0; ++t) {
    if (!(ps[t] > 0.0)) continue;
    lastT = t;
    if (cum + ps[t] <= target) { cum += ps[t]; continue; } // not in this thread's 8
    for (long long v = a0 + t * 8; v < a0 + t * 8 + 8 && v < a1; ++v) {
      const float x = work[v];
      if (!genc_tok_kept(rr, st, x, v, 3)) continue;
      cum += exp((double)__fsub_rn(x, st.max));
      if (cum > target) { tok = v; break; }
    }
  }
  // Rounding left the target unreached: the part's last positive weight.
  long long lastPos = -1;
  if (tok < 0 && lastT >= 0)
    for (long long v = a0 + lastT * 8; v < a0 + lastT * 8 + 8 && v < a1; ++v)
      if (genc_tok_kept(rr, st, work[v], v, 3) && exp((double)__fsub_rn(work[v], st.max)) > 0.0) lastPos = v;
  if (tok < 0) tok = lastPos >= 0 ? lastPos : st.argmax;
  tokens[r] = tok;
  logprobs[r] = __fsub_rn(__fsub_rn(work[tok], st.max), (float)log(W));
}
)";
} // namespace

const char *tokenKernelsSource() {
  static const std::string s = std::string("\n") + genrt::cuda::kGencTokenAbiSource + kSource + kChooseSource;
  return s.c_str();
}

} // namespace genc
