// The 1.1B Llama's batch-1 decode step as ONE persistent kernel, on the
// device machine: can a step that never returns to the host between layers
// stream the weights at >= 80% of the copy bandwidth (#9's target), where
// genrun's ~6 launches a layer reach ~51% on the H200 (docs/performance.md,
// session 19: 1.036 ms against a 0.530 ms floor)?
//
// The kernel (one block an SM, co-resident by a cooperative launch) walks
// the step's phases, a grid barrier between them (a counter in global
// memory, never reset: each launch's barriers count on from `base`):
//
//   per layer: qkv = W_qkv · rmsnorm(x)            (GEMV, f32 atomics)
//              attention of the 32 query heads     (32 blocks; RoPE, append)
//              x  += W_o · attn                     (GEMV)
//              gu  = W_gu · rmsnorm(x)              (GEMV, gate and up rows)
//              x  += W_d · (silu(g) * u)            (GEMV)
//   then:      logits = W_lm · rmsnorm(x); argmax   (block 0)
//
// What it tests is the overlap a launch boundary forbids: the weights do
// not depend on the activations, so a block can stream its next GEMV's
// weights while the grid meets and while attention, which waits on
// latency, runs in 32 blocks. Two ways:
//   registers: a warp's share of a GEMV is a contiguous run of its weight
//     matrix (every warp the same bytes, whatever the shape); it loads its
//     first U 512-byte chunks into registers before the barrier (64 KB an SM);
//   ring: a loader warp a block streams the block's whole weight sequence
//     (GEMV after GEMV, layer after layer) through NS 16 KB slots of shared
//     memory by bulk copies, as far ahead as the slots allow (128-192 KB an
//     SM), whatever the compute warps wait on.
// Attention either in 32 blocks (a head each, a warp a key) or split over
// 128 (a quarter of a head's keys each, a thread a key; the Wo GEMV's
// vector merges the parts). Block 0 stamps its arrival at and departure
// from every barrier, so the table after the timing splits a step into
// its phases. Two timing-only rows bound it: the same work with no grid
// barriers (wrong sums, the same bytes), and the barriers alone.
//
// Measured (H200, session 20, docs/performance.md): both correct; 1.140 ms
// a step with registers, 1.348-1.350 with the ring, against genrun's
// 1.036 ms for the same model: the bytes in flight were not what limits it.
// The split attention, the stamps and the timing-only rows came after
// and have not run yet.
//
// Shapes (the issue's workload a): D 2048, 32 heads / 4 KV heads of 64, FFN
// 5632, vocab 32000 (the LM head doubles as the embedding), f16 weights and
// cache, f32 activations and sums. A reference of one plain kernel an op
// (independent code: thread-per-key attention, warp-per-row GEMVs) runs the
// same tokens at the same positions; the check compares every step's logits
// and argmax. Then the timing: ms a step of each, against the floor
// (weight + KV bytes / the device-to-device copy bandwidth measured here,
// bytes read + written, as tools/bench.py counts it).
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o dist/step_lab tools/step_lab.cu   # here
//   dist/step_lab [--layers 22] [--prompt 128] [--steps 64]                # there
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int D = 2048, H = 32, KVH = 4, HD = 64, F = 5632, V = 32000;
constexpr int QKV = (H + 2 * KVH) * HD; // 2560 rows: q heads, k heads, v heads
constexpr int GROUP = H / KVH;
constexpr int MAXCTX = 2048;
constexpr int MAXWARPS = 16; // a block: 256 or 512 threads (the kernel's template)
constexpr int CHUNK = 256;   // elements a warp-chunk: 32 lanes x one 16-byte word
constexpr float EPS = 1e-5f;

#define CHECK(x)                                                                                                       \
  do {                                                                                                                 \
    cudaError_t e = (x);                                                                                               \
    if (e != cudaSuccess) {                                                                                            \
      std::fprintf(stderr, "step_lab: %s: %s\n", #x, cudaGetErrorString(e));                                           \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

struct Layer {
  const __half *wqkv, *wo, *wgu, *wd; // [QKV, D], [D, D], [2F, D] (gate rows, then up), [D, F]
  const __half *n1, *n2;              // rmsnorm weights [D]
  __half *kc, *vc;                    // cache [KVH, MAXCTX, HD]
};

struct Model {
  const Layer *layers;      // device array
  int L, barriers;          // barriers: grid barriers a launch (5 a layer + 2)
  const __half *lm, *nf;    // [V, D] (also the embedding), [D]
  const float *cosT, *sinT; // [MAXCTX, HD / 2]
};

struct State {
  float *x, *qkv, *attn, *gu, *logits; // [D], [QKV], [D], [2F], [V]
  float *attnPart;                     // split attention: outputs [H, PARTS, HD], then log-sum-exps [H, PARTS]
  int *token;
  unsigned long long *ctr;    // the persistent kernel's barrier
  unsigned long long *stamps; // block 0's arrival and departure at barrier k (1-based): [2 k], [2 k + 1]
};

// ---- device helpers --------------------------------------------------------
// The block's compute threads (NT of them) meet at named barrier 1, so a
// block may hold a loader warp that never joins them.

template <int NT> __device__ __forceinline__ void csync() { asm volatile("bar.sync 1, %0;" ::"n"(NT) : "memory"); }

__device__ __forceinline__ uint4 ldw(const uint4 *p) { // a weight word: read once, kept out of L1
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum (or max) over NT threads; every one gets it. red: NT / 32 floats.
template <bool MAX, int NT> __device__ float blockReduce(float v, float *red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = MAX ? warpMax(v) : warpSum(v);
  csync<NT>(); // red may hold an earlier reduction's values
  if (lane == 0)
    red[warp] = v;
  csync<NT>();
  float r = MAX ? -INFINITY : 0.f;
  for (int w = 0; w < NT / 32; ++w)
    r = MAX ? fmaxf(r, red[w]) : r + red[w];
  return r;
}

// sc[0, n) := exp(sc - max), by NT threads: m (each thread's max so far)
// becomes the block's max; returns the sum (its barriers order sc's
// writes before any thread's reads after it).
template <int NT> __device__ float softmaxNumerators(float *sc, int n, float &m, float *red) {
  m = blockReduce<true, NT>(m, red);
  float l = 0.f;
  for (int j = threadIdx.x; j < n; j += NT) {
    const float p = __expf(sc[j] - m);
    sc[j] = p;
    l += p;
  }
  return blockReduce<false, NT>(l, red);
}

__device__ __forceinline__ float dot8(uint4 w, const float *v) {
  const float4 a = *reinterpret_cast<const float4 *>(v), b = *reinterpret_cast<const float4 *>(v + 4);
  const float2 f0 = __half22float2(*reinterpret_cast<const __half2 *>(&w.x));
  const float2 f1 = __half22float2(*reinterpret_cast<const __half2 *>(&w.y));
  const float2 f2 = __half22float2(*reinterpret_cast<const __half2 *>(&w.z));
  const float2 f3 = __half22float2(*reinterpret_cast<const __half2 *>(&w.w));
  return f0.x * a.x + f0.y * a.y + f1.x * a.z + f1.y * a.w + f2.x * b.x + f2.y * b.y + f3.x * b.z + f3.y * b.w;
}

// Every block arrives, then waits for all: thread 0 adds to the counter and
// spins until it reaches this barrier's target (launch base + barriers so far
// x grid). The fences make the block's writes (and atomics) visible before
// its arrival and the others' visible after the wait, as cooperative groups'
// grid.sync() does.
// Block 0 stamps its arrival and departure (%globaltimer, ns): where a
// step's time goes, phase by phase.
__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <int NT> __device__ __forceinline__ void gridSync(const State &s, int barriers, unsigned long long &target) {
  target += gridDim.x;
  csync<NT>();
  if (threadIdx.x == 0) {
    const unsigned long long k = (target / gridDim.x - 1) % barriers + 1;
    if (blockIdx.x == 0)
      s.stamps[2 * k] = now();
    __threadfence();
    atomicAdd(s.ctr, 1ULL);
    unsigned long long v;
    do {
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(s.ctr) : "memory");
    } while (v < target);
    __threadfence();
    if (blockIdx.x == 0)
      s.stamps[2 * k + 1] = now();
  }
  csync<NT>();
}

// mbarriers (the ring's full and empty slots) and the bulk copy engine.
__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarInit(uint64_t *b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarWait(uint64_t *b, uint32_t parity) {
  asm volatile("{\n"
               ".reg .pred P1;\n"
               "LAB_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
               "@P1 bra DONE;\n"
               "bra LAB_WAIT;\n"
               "DONE:\n"
               "}\n" ::"r"(smemAddr(b)),
               "r"(parity)
               : "memory");
}
__device__ __forceinline__ void mbarArrive(uint64_t *b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smemAddr(b)) : "memory");
}
__device__ __forceinline__ void mbarExpect(uint64_t *b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulkLoad(void *dst, const void *src, uint32_t bytes, uint64_t *b) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smemAddr(dst)),
      "l"(src), "r"(bytes), "r"(smemAddr(b))
      : "memory");
}

// ---- the persistent kernel's phases -----------------------------------------

// The GEMV's input vector, made by every block into shared memory.
enum class Vec { Norm, Copy, SwiGlu, Merge };
constexpr int PARTS = 4; // split attention: the keys of a head in 4 blocks

template <int NT> __device__ void loadVector(Vec kind, const float *src, const __half *w, float *vS, float *red) {
  const int tid = threadIdx.x;
  if (kind == Vec::Norm) { // vS = rmsnorm(src) * w
    float ss = 0.f;
    for (int i = tid; i < D; i += NT) {
      const float t = __ldcg(src + i);
      vS[i] = t;
      ss += t * t;
    }
    const float rs = rsqrtf(blockReduce<false, NT>(ss, red) / D + EPS);
    for (int i = tid; i < D; i += NT)
      vS[i] = vS[i] * rs * __half2float(w[i]);
  } else if (kind == Vec::Merge) { // the split attention's parts: sum_p e^(lse_p - max) o_p / sum_p e^(lse_p - max)
    const float *lse = src + H * PARTS * HD;
    for (int i = tid; i < D; i += NT) {
      const int h = i / HD, d = i % HD;
      float l[PARTS], mx = -INFINITY;
#pragma unroll
      for (int p = 0; p < PARTS; ++p)
        mx = fmaxf(mx, l[p] = __ldcg(lse + h * PARTS + p));
      float num = 0.f, den = 0.f;
#pragma unroll
      for (int p = 0; p < PARTS; ++p) {
        const float w = l[p] == -INFINITY ? 0.f : __expf(l[p] - mx);
        num += w * __ldcg(src + (h * PARTS + p) * HD + d);
        den += w;
      }
      vS[i] = num / den;
    }
  } else if (kind == Vec::Copy) {
    for (int i = tid; i < D; i += NT)
      vS[i] = __ldcg(src + i);
  } else { // silu(gate) * up
    for (int i = tid; i < F; i += NT) {
      const float g = __ldcg(src + i), u = __ldcg(src + F + i);
      vS[i] = g / (1.f + __expf(-g)) * u;
    }
  }
  csync<NT>();
}

// One GEMV of the step: out[r] += W[r, :] · v for r < N (W [N, K]
// row-major, K a multiple of 256), v made after the barrier that readies
// its input; `zero` (zeroN floats) cleared by the grid after it.
struct Gemv {
  const __half *W;
  int N, K;
  Vec kind;
  const float *src;
  const __half *nw;
  float *out, *zero;
  int zeroN;
};

// The step's GEMVs in order, as the kernel and its loader warp walk them.
__device__ __forceinline__ Gemv layerGemv(const Layer &ly, const State &s, int l, int g, bool split) {
  switch (g) {
  case 0:
    return {ly.wqkv, QKV, D, Vec::Norm, s.x, ly.n1, s.qkv, s.gu, l > 0 ? 2 * F : 0};
  case 1:
    return split ? Gemv{ly.wo, D, D, Vec::Merge, s.attnPart, nullptr, s.x, s.qkv, QKV}
                 : Gemv{ly.wo, D, D, Vec::Copy, s.attn, nullptr, s.x, s.qkv, QKV};
  case 2:
    return {ly.wgu, 2 * F, D, Vec::Norm, s.x, ly.n2, s.gu, nullptr, 0};
  default:
    return {ly.wd, D, F, Vec::SwiGlu, s.gu, nullptr, s.x, nullptr, 0};
  }
}
__device__ __forceinline__ Gemv headGemv(const Model &m, const State &s) {
  return {m.lm, V, D, Vec::Norm, s.x, m.nf, s.logits, nullptr, 0};
}

// Registers: warp gw of the grid owns chunks [c0, c1) of the matrix's
// N K / 256 (a contiguous run of its bytes; every warp the same count). Its
// first U chunks are loaded before the barrier; the loop keeps U in flight.
// A row's partial sum goes out by one atomic when the warp's run leaves the row.
template <int U, int NT, bool SYNC = true>
__device__ void gemvRegisters(const Gemv &g, const State &s, int barriers, unsigned long long &target, float *vS,
                              float *red) {
  constexpr int WARPS = NT / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int CPR = g.K / CHUNK;
  const long long NC = (long long)g.N * CPR, GW = (long long)gridDim.x * WARPS,
                  gw = (long long)blockIdx.x * WARPS + warp;
  const int c0 = (int)(NC * gw / GW), c1 = (int)(NC * (gw + 1) / GW);
  const uint4 *w4 = reinterpret_cast<const uint4 *>(g.W) + lane;
  uint4 cur[U];
#pragma unroll
  for (int j = 0; j < U; ++j)
    if (c0 + j < c1)
      cur[j] = ldw(w4 + (long long)(c0 + j) * 32);
  if (SYNC)
    gridSync<NT>(s, barriers, target);
  else
    csync<NT>(); // timing only: no grid barrier (the sums race)
  for (int i = blockIdx.x * NT + threadIdx.x; i < g.zeroN; i += gridDim.x * NT)
    g.zero[i] = 0.f;
  loadVector<NT>(g.kind, g.src, g.nw, vS, red);
  float acc = 0.f;
  int row = c0 / CPR, kc = c0 - row * CPR;
  for (int c = c0; c < c1; c += U) {
    uint4 nxt[U];
#pragma unroll
    for (int j = 0; j < U; ++j)
      if (c + U + j < c1)
        nxt[j] = ldw(w4 + (long long)(c + U + j) * 32);
#pragma unroll
    for (int j = 0; j < U; ++j)
      if (c + j < c1) {
        acc += dot8(cur[j], vS + kc * CHUNK + lane * 8);
        if (++kc == CPR) {
          acc = warpSum(acc);
          if (lane == 0)
            atomicAdd(g.out + row, acc);
          acc = 0.f;
          kc = 0;
          ++row;
        }
      }
#pragma unroll
    for (int j = 0; j < U; ++j)
      cur[j] = nxt[j];
  }
  if (c0 < c1 && kc != 0) { // the run ends inside a row
    acc = warpSum(acc);
    if (lane == 0)
      atomicAdd(g.out + row, acc);
  }
}

// The ring: block b owns chunks [c0, c1) of each GEMV (contiguous bytes; a
// block's runs, GEMV after GEMV, layer after layer, are its weight stream).
// A loader warp copies the stream in stages of up to SC chunks (16 KB) into
// NS slots of shared memory (bulk copies completing on a slot's full
// mbarrier) as fast as slots free up, whatever the compute warps wait on: a
// grid barrier, the input vector, attention. Each compute warp takes 2
// chunks of a stage; rows are summed in shared memory (rowAcc) and go out by
// one global atomic a row at the GEMV's end.
constexpr int SC = 32, STAGE_BYTES = SC * CHUNK * 2, MAX_BLOCK_ROWS = 512;

__device__ __forceinline__ void blockChunks(const Gemv &g, int &c0, int &c1) {
  const long long NC = (long long)g.N * (g.K / CHUNK);
  c0 = (int)(NC * blockIdx.x / gridDim.x);
  c1 = (int)(NC * (blockIdx.x + 1) / gridDim.x);
}

struct Ring {
  unsigned char *buf;
  uint64_t *full, *empty;
  int k; // the next stage (compute side)
};

template <int NS> __device__ void loadStages(const Gemv &g, const Ring &r, int &k) { // the loader warp's lane 0
  int c0, c1;
  blockChunks(g, c0, c1);
  for (int cs = c0; cs < c1; cs += SC, ++k) {
    const int n = min(SC, c1 - cs), slot = k % NS;
    if (k >= NS)
      mbarWait(r.empty + slot, ((k / NS) - 1) & 1);
    mbarExpect(r.full + slot, n * CHUNK * 2);
    bulkLoad(r.buf + (size_t)slot * STAGE_BYTES, g.W + (long long)cs * CHUNK, n * CHUNK * 2, r.full + slot);
  }
}

template <int NS, int NT>
__device__ void gemvRing(const Gemv &g, Ring &r, const State &s, int barriers, unsigned long long &target, float *vS,
                         float *red, float *rowAcc) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int CPR = g.K / CHUNK;
  int c0, c1;
  blockChunks(g, c0, c1);
  gridSync<NT>(s, barriers, target);
  for (int i = blockIdx.x * NT + threadIdx.x; i < g.zeroN; i += gridDim.x * NT)
    g.zero[i] = 0.f;
  loadVector<NT>(g.kind, g.src, g.nw, vS, red);
  const int rowBase = c0 / CPR;
  for (int cs = c0; cs < c1; cs += SC, ++r.k) {
    const int n = min(SC, c1 - cs), slot = r.k % NS;
    mbarWait(r.full + slot, (r.k / NS) & 1);
    const uint4 *st = reinterpret_cast<const uint4 *>(r.buf + (size_t)slot * STAGE_BYTES);
    float acc = 0.f;
    int prev = -1;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int idx = 2 * warp + i;
      if (idx < n) {
        const int c = cs + idx, row = c / CPR, kc = c - row * CPR;
        const float p = dot8(st[idx * 32 + lane], vS + kc * CHUNK + lane * 8);
        if (row != prev && prev >= 0) {
          acc = warpSum(acc);
          if (lane == 0)
            atomicAdd(rowAcc + prev - rowBase, acc);
          acc = 0.f;
        }
        prev = row;
        acc += p;
      }
    }
    if (prev >= 0) {
      acc = warpSum(acc);
      if (lane == 0)
        atomicAdd(rowAcc + prev - rowBase, acc);
    }
    __syncwarp();
    if (lane == 0)
      mbarArrive(r.empty + slot);
  }
  csync<NT>(); // every warp's rows summed
  const int rows = c1 > c0 ? (c1 - 1) / CPR - rowBase + 1 : 0;
  for (int i = threadIdx.x; i < rows; i += NT) {
    atomicAdd(g.out + rowBase + i, rowAcc[i]);
    rowAcc[i] = 0.f;
  }
}

// Query head h's row and its KV head's k and v into shared memory, q and k
// rotated (rotate_half: pairs (i, i + 32)), k and v rounded as the cache
// holds them.
template <int NT>
__device__ void attentionRows(int h, const float *qkv, int pos, const float *cosT, const float *sinT, float *qS,
                              float *kS, float *vS) {
  const int tid = threadIdx.x, kvh = h / GROUP;
  if (tid < HD) {
    qS[tid] = __ldcg(qkv + h * HD + tid);
    kS[tid] = __ldcg(qkv + (H + kvh) * HD + tid);
    vS[tid] = __half2float(__float2half(__ldcg(qkv + (H + KVH + kvh) * HD + tid)));
  }
  csync<NT>();
  if (tid < HD / 2) { // rotate_half: pairs (i, i + 32)
    const float c = cosT[pos * (HD / 2) + tid], s = sinT[pos * (HD / 2) + tid];
    const float q0 = qS[tid], q1 = qS[tid + HD / 2], k0 = kS[tid], k1 = kS[tid + HD / 2];
    qS[tid] = q0 * c - q1 * s;
    qS[tid + HD / 2] = q1 * c + q0 * s;
    kS[tid] = __half2float(__float2half(k0 * c - k1 * s));
    kS[tid + HD / 2] = __half2float(__float2half(k1 * c + k0 * s));
  }
  csync<NT>();
}

// Query head h (one block): RoPE on q and the step's k, the group's first
// head appends k and v at pos, softmax(q K^T / 8) V over positions [0, pos].
// The step's own key and value come from registers rounded as the cache
// holds them (the other heads of the group do not read the row being written).
template <int NT>
__device__ void attentionBlock(int h, const float *qkv, const Layer &ly, int pos, const float *cosT, const float *sinT,
                               float *attnOut, float *sm, float *red) {
  constexpr int WARPS = NT / 32;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, kvh = h / GROUP;
  float *qS = sm, *kS = sm + HD, *vS = sm + 2 * HD, *sc = sm + 3 * HD, *part = sc + MAXCTX; // part [WARPS][HD]
  attentionRows<NT>(h, qkv, pos, cosT, sinT, qS, kS, vS);
  const long long base = (long long)kvh * MAXCTX * HD;
  if (h % GROUP == 0 && tid < HD) {
    ly.kc[base + (long long)pos * HD + tid] = __float2half(kS[tid]);
    ly.vc[base + (long long)pos * HD + tid] = __float2half(vS[tid]);
  }
  const int ctx = pos + 1;
  const float2 q = make_float2(qS[2 * lane], qS[2 * lane + 1]);
  for (int j = warp; j < ctx; j += WARPS) {
    const float2 k =
        j == pos ? make_float2(kS[2 * lane], kS[2 * lane + 1])
                 : __half22float2(__ldcg(reinterpret_cast<const __half2 *>(ly.kc + base + (long long)j * HD) + lane));
    const float s = warpSum(q.x * k.x + q.y * k.y);
    if (lane == 0)
      sc[j] = s * 0.125f; // 1 / sqrt(64)
  }
  csync<NT>();
  float m = -INFINITY;
  for (int j = tid; j < ctx; j += NT)
    m = fmaxf(m, sc[j]);
  const float l = softmaxNumerators<NT>(sc, ctx, m, red);
  float2 o = make_float2(0.f, 0.f);
  for (int j = warp; j < ctx; j += WARPS) {
    const float2 v =
        j == pos ? make_float2(vS[2 * lane], vS[2 * lane + 1])
                 : __half22float2(__ldcg(reinterpret_cast<const __half2 *>(ly.vc + base + (long long)j * HD) + lane));
    o.x += sc[j] * v.x;
    o.y += sc[j] * v.y;
  }
  part[warp * HD + 2 * lane] = o.x;
  part[warp * HD + 2 * lane + 1] = o.y;
  csync<NT>();
  if (tid < HD) {
    float s = 0.f;
    for (int w = 0; w < WARPS; ++w)
      s += part[w * HD + tid];
    attnOut[h * HD + tid] = s / l;
  }
}

// Split attention: block (h, part) takes keys [part ctx / 4, (part + 1)
// ctx / 4) of query head h, a thread a key for the scores (its row's 8
// words at once, q from shared memory), 8 groups of 64 threads over the
// keys for P V; it leaves its normalised output and log-sum-exp for the Wo
// GEMV's vector (Vec::Merge). 128 blocks instead of 32, and no key waits on
// another's shuffle chain.
template <int NT>
__device__ void attentionPart(int h, int part, const float *qkv, const Layer &ly, int pos, const float *cosT,
                              const float *sinT, float *attnPart, float *sm, float *red) {
  const int tid = threadIdx.x, kvh = h / GROUP;
  float *qS = sm, *kS = sm + HD, *vS = sm + 2 * HD, *sc = sm + 3 * HD, *grp = sc + MAXCTX; // grp [8][HD]
  attentionRows<NT>(h, qkv, pos, cosT, sinT, qS, kS, vS);
  const long long base = (long long)kvh * MAXCTX * HD;
  if (h % GROUP == 0 && part == 0 && tid < HD) {
    ly.kc[base + (long long)pos * HD + tid] = __float2half(kS[tid]);
    ly.vc[base + (long long)pos * HD + tid] = __float2half(vS[tid]);
  }
  const int ctx = pos + 1, a = part * ctx / PARTS, b = (part + 1) * ctx / PARTS, n = b - a;
  float m = -INFINITY;
  for (int t = tid; t < n; t += NT) {
    const int j = a + t;
    float s = 0.f;
    if (j == pos) {
      for (int d = 0; d < HD; ++d)
        s += qS[d] * kS[d];
    } else {
      const uint4 *row = reinterpret_cast<const uint4 *>(ly.kc + base + (long long)j * HD);
      uint4 w[HD / 8];
#pragma unroll
      for (int x = 0; x < HD / 8; ++x)
        w[x] = __ldcg(row + x);
#pragma unroll
      for (int x = 0; x < HD / 8; ++x)
        s += dot8(w[x], qS + 8 * x);
    }
    sc[t] = s * 0.125f;
    m = fmaxf(m, sc[t]);
  }
  const float l = softmaxNumerators<NT>(sc, n, m, red);
  const int d = tid % HD, g = tid / HD; // NT / HD groups
  float o = 0.f;
  for (int t = g; t < n; t += NT / HD) {
    const int j = a + t;
    o += sc[t] * (j == pos ? vS[d] : __half2float(ly.vc[base + (long long)j * HD + d]));
  }
  grp[g * HD + d] = o;
  csync<NT>();
  if (tid < HD) {
    float sum = 0.f;
    for (int x = 0; x < NT / HD; ++x)
      sum += grp[x * HD + tid];
    attnPart[(h * PARTS + part) * HD + tid] = n > 0 ? sum / l : 0.f;
    if (tid == 0)
      attnPart[H * PARTS * HD + h * PARTS + part] = n > 0 ? m + logf(l) : -INFINITY;
  }
}

// Attention's phase: 32 blocks a head each, or 128 a quarter of a head's keys.
template <int NT, bool SPLIT>
__device__ void attentionPhase(const Model &m, const State &s, const Layer &ly, int pos, float *sm, float *red) {
  if (SPLIT) {
    if (blockIdx.x < H * PARTS)
      attentionPart<NT>(blockIdx.x / PARTS, blockIdx.x % PARTS, s.qkv, ly, pos, m.cosT, m.sinT, s.attnPart, sm, red);
  } else if (blockIdx.x < H) {
    attentionBlock<NT>(blockIdx.x, s.qkv, ly, pos, m.cosT, m.sinT, s.attn, sm, red);
  }
}

// Shared memory: the largest of the GEMV vector (F floats) and attention's
// q, k, v, scores and partial outputs.
constexpr int SMEM_FLOATS = std::max(F, 3 * HD + MAXCTX + MAXWARPS * HD);

// The step's start (x = embedding row, the accumulators zeroed) and end
// (block 0: the argmax, the first of equal maxima).
template <int NT> __device__ void stepStart(const Model &m, const State &s, int tok) {
  for (int i = blockIdx.x * NT + threadIdx.x; i < V; i += gridDim.x * NT) {
    s.logits[i] = 0.f;
    if (i < D)
      s.x[i] = __half2float(m.lm[(long long)tok * D + i]);
    if (i < QKV)
      s.qkv[i] = 0.f;
    if (i < 2 * F)
      s.gu[i] = 0.f;
  }
}

template <int NT> __device__ void argmaxBlock(const float *logits, int *token, float *bv, int *ba) {
  float best = -INFINITY;
  int arg = 0;
  for (int i = threadIdx.x; i < V; i += NT) {
    const float v = __ldcg(logits + i);
    if (v > best) {
      best = v;
      arg = i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float b2 = __shfl_xor_sync(0xffffffffu, best, o);
    const int a2 = __shfl_xor_sync(0xffffffffu, arg, o);
    if (b2 > best || (b2 == best && a2 < arg)) {
      best = b2;
      arg = a2;
    }
  }
  if ((threadIdx.x & 31) == 0) {
    bv[threadIdx.x >> 5] = best;
    ba[threadIdx.x >> 5] = arg;
  }
  csync<NT>();
  if (threadIdx.x == 0) {
    for (int w = 1; w < NT / 32; ++w)
      if (bv[w] > best || (bv[w] == best && ba[w] < arg)) {
        best = bv[w];
        arg = ba[w];
      }
    *token = arg;
  }
}

// Registers: U 16-byte words a lane in flight, T threads a block (one block an SM).
// SYNC false (timing only): the same work with block barriers instead of
// grid barriers, so the step's time without the meetings.
template <int U, int T, bool SPLIT, bool SYNC = true>
__global__ void __launch_bounds__(T, 1) stepRegisters(Model m, State s, int tok, int pos, unsigned long long base) {
  __shared__ __align__(16) float sm[SMEM_FLOATS];
  __shared__ float red[T / 32];
  __shared__ int ba[T / 32];
  unsigned long long target = base;
  stepStart<T>(m, s, tok);
  for (int l = 0; l < m.L; ++l) {
    const Layer ly = m.layers[l];
    gemvRegisters<U, T, SYNC>(layerGemv(ly, s, l, 0, SPLIT), s, m.barriers, target, sm, red);
    if (SYNC)
      gridSync<T>(s, m.barriers, target);
    else
      csync<T>();
    attentionPhase<T, SPLIT>(m, s, ly, pos, sm, red);
    for (int g = 1; g < 4; ++g)
      gemvRegisters<U, T, SYNC>(layerGemv(ly, s, l, g, SPLIT), s, m.barriers, target, sm, red);
  }
  gemvRegisters<U, T, SYNC>(headGemv(m, s), s, m.barriers, target, sm, red);
  if (SYNC)
    gridSync<T>(s, m.barriers, target);
  else
    csync<T>();
  if (blockIdx.x == 0)
    argmaxBlock<T>(s.logits, s.token, red, ba);
}

// Timing only: the step's grid barriers and nothing else.
__global__ void __launch_bounds__(512, 1)
    stepBarriersOnly(Model m, State s, int tok, int pos, unsigned long long base) {
  unsigned long long target = base;
  for (int k = 0; k < m.barriers; ++k)
    gridSync<512>(s, m.barriers, target);
}

// The ring: 16 compute warps and a loader warp; NS slots of 16 KB
// (dynamic shared memory).
template <int NS, bool SPLIT>
__global__ void __launch_bounds__(544, 1) stepRing(Model m, State s, int tok, int pos, unsigned long long base) {
  constexpr int NT = 512;
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(16) float sm[SMEM_FLOATS];
  __shared__ float red[NT / 32], rowAcc[MAX_BLOCK_ROWS];
  __shared__ int ba[NT / 32];
  __shared__ uint64_t full[NS], empty[NS];
  if (threadIdx.x < NS) {
    mbarInit(full + threadIdx.x, 1);
    mbarInit(empty + threadIdx.x, NT / 32);
  }
  for (int i = threadIdx.x; i < MAX_BLOCK_ROWS; i += blockDim.x)
    rowAcc[i] = 0.f;
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  Ring r{ring, full, empty, 0};
  if (threadIdx.x >= NT) { // the loader warp: the block's whole weight stream, in order
    if (threadIdx.x == NT) {
      int k = 0;
      for (int l = 0; l < m.L; ++l) {
        const Layer ly = m.layers[l];
        for (int g = 0; g < 4; ++g)
          loadStages<NS>(layerGemv(ly, s, l, g, SPLIT), r, k);
      }
      loadStages<NS>(headGemv(m, s), r, k);
    }
    return;
  }
  unsigned long long target = base;
  stepStart<NT>(m, s, tok);
  for (int l = 0; l < m.L; ++l) {
    const Layer ly = m.layers[l];
    gemvRing<NS, NT>(layerGemv(ly, s, l, 0, SPLIT), r, s, m.barriers, target, sm, red, rowAcc);
    gridSync<NT>(s, m.barriers, target);
    attentionPhase<NT, SPLIT>(m, s, ly, pos, sm, red);
    for (int g = 1; g < 4; ++g)
      gemvRing<NS, NT>(layerGemv(ly, s, l, g, SPLIT), r, s, m.barriers, target, sm, red, rowAcc);
  }
  gemvRing<NS, NT>(headGemv(m, s), r, s, m.barriers, target, sm, red, rowAcc);
  gridSync<NT>(s, m.barriers, target);
  if (blockIdx.x == 0)
    argmaxBlock<NT>(s.logits, s.token, red, ba);
}

constexpr int kBarriersPerLayer = 5, kBarriersAfterLayers = 2;

// ---- the reference: one plain kernel an op -----------------------------------

__global__ void refEmbed(const __half *lm, int tok, float *x) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < D)
    x[i] = __half2float(lm[(long long)tok * D + i]);
}

__global__ void refNorm(const float *x, const __half *w, float *y) { // one block of 1024
  __shared__ float red[32];
  float ss = 0.f;
  for (int i = threadIdx.x; i < D; i += blockDim.x)
    ss += x[i] * x[i];
  ss = blockReduce<false, 1024>(ss, red);
  const float rs = rsqrtf(ss / D + EPS);
  for (int i = threadIdx.x; i < D; i += blockDim.x)
    y[i] = x[i] * rs * __half2float(w[i]);
}

__global__ void refGemv(const __half *W, int N, int K, const float *v, float *out, bool add) { // a warp a row
  const int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (r >= N)
    return;
  float s = 0.f;
  for (int k = lane; k < K; k += 32)
    s += __half2float(W[(long long)r * K + k]) * v[k];
  s = warpSum(s);
  if (lane == 0)
    out[r] = add ? out[r] + s : s;
}

__global__ void refRope(float *qkv, const float *cosT, const float *sinT,
                        int pos) { // block a head (q, then k), 32 threads
  float *row = qkv + blockIdx.x * HD;
  const int i = threadIdx.x;
  const float c = cosT[pos * (HD / 2) + i], s = sinT[pos * (HD / 2) + i], a = row[i], b = row[i + HD / 2];
  row[i] = a * c - b * s;
  row[i + HD / 2] = b * c + a * s;
}

__global__ void refAppend(const float *qkv, __half *kc, __half *vc, int pos) { // block a KV head, 64 threads
  const long long at = ((long long)blockIdx.x * MAXCTX + pos) * HD + threadIdx.x;
  kc[at] = __float2half(qkv[(H + blockIdx.x) * HD + threadIdx.x]);
  vc[at] = __float2half(qkv[(H + KVH + blockIdx.x) * HD + threadIdx.x]);
}

__global__ void refAttention(const float *qkv, const __half *kc, const __half *vc, int ctx,
                             float *out) { // block a head
  __shared__ float sc[MAXCTX];
  __shared__ float red[32];
  const int h = blockIdx.x, kvh = h / GROUP;
  const float *q = qkv + h * HD;
  const __half *K = kc + (long long)kvh * MAXCTX * HD, *Vv = vc + (long long)kvh * MAXCTX * HD;
  for (int j = threadIdx.x; j < ctx; j += blockDim.x) {
    float s = 0.f;
    for (int d = 0; d < HD; ++d)
      s += q[d] * __half2float(K[(long long)j * HD + d]);
    sc[j] = s * 0.125f;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < ctx; j += blockDim.x)
    m = fmaxf(m, sc[j]);
  m = blockReduce<true, 256>(m, red);
  float l = 0.f;
  for (int j = threadIdx.x; j < ctx; j += blockDim.x)
    l += expf(sc[j] - m);
  l = blockReduce<false, 256>(l, red);
  if (threadIdx.x < HD) {
    float o = 0.f;
    for (int j = 0; j < ctx; ++j)
      o += expf(sc[j] - m) * __half2float(Vv[(long long)j * HD + threadIdx.x]);
    out[h * HD + threadIdx.x] = o / l;
  }
}

__global__ void refSwiGlu(const float *gu, float *h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < F)
    h[i] = gu[i] / (1.f + expf(-gu[i])) * gu[F + i];
}

__global__ void refArgmax(const float *logits, int *token) { // one block of 1024
  __shared__ float bv[32];
  __shared__ int ba[32];
  argmaxBlock<1024>(logits, token, bv, ba);
}

struct RefState {
  float *x, *y, *qkv, *attn, *gu, *h, *logits;
  int *token;
};

void referenceStep(const std::vector<Layer> &layers, const Model &m, const RefState &r, int tok, int pos,
                   cudaStream_t st) {
  refEmbed<<<(D + 255) / 256, 256, 0, st>>>(m.lm, tok, r.x);
  for (const Layer &ly : layers) {
    refNorm<<<1, 1024, 0, st>>>(r.x, ly.n1, r.y);
    refGemv<<<(QKV + 7) / 8, 256, 0, st>>>(ly.wqkv, QKV, D, r.y, r.qkv, false);
    refRope<<<H + KVH, HD / 2, 0, st>>>(r.qkv, m.cosT, m.sinT, pos);
    refAppend<<<KVH, HD, 0, st>>>(r.qkv, ly.kc, ly.vc, pos);
    refAttention<<<H, 256, 0, st>>>(r.qkv, ly.kc, ly.vc, pos + 1, r.attn);
    refGemv<<<(D + 7) / 8, 256, 0, st>>>(ly.wo, D, D, r.attn, r.x, true);
    refNorm<<<1, 1024, 0, st>>>(r.x, ly.n2, r.y);
    refGemv<<<(2 * F + 7) / 8, 256, 0, st>>>(ly.wgu, 2 * F, D, r.y, r.gu, false);
    refSwiGlu<<<(F + 255) / 256, 256, 0, st>>>(r.gu, r.h);
    refGemv<<<(D + 7) / 8, 256, 0, st>>>(ly.wd, D, F, r.h, r.x, true);
  }
  refNorm<<<1, 1024, 0, st>>>(r.x, m.nf, r.y);
  refGemv<<<(V + 7) / 8, 256, 0, st>>>(m.lm, V, D, r.y, r.logits, false);
  refArgmax<<<1, 1024, 0, st>>>(r.logits, r.token);
}

// ---- set-up ----------------------------------------------------------------

__device__ __forceinline__ float hashUniform(unsigned long long seed, long long i) { // [-1, 1)
  unsigned long long z = seed * 0x9E3779B97F4A7C15ull + (unsigned long long)i;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) / (float)(1ull << 23) - 1.f;
}

__global__ void fillHalf(__half *p, long long n, unsigned long long seed, float scale, float offset) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = __float2half(offset + scale * hashUniform(seed, i));
}

__half *newHalf(long long n, unsigned long long seed, float scale, float offset = 0.f) {
  __half *p;
  CHECK(cudaMalloc(&p, n * sizeof(__half)));
  fillHalf<<<1024, 256>>>(p, n, seed, scale, offset);
  CHECK(cudaGetLastError());
  return p;
}

float *newFloats(long long n) {
  float *p;
  CHECK(cudaMalloc(&p, n * sizeof(float)));
  CHECK(cudaMemset(p, 0, n * sizeof(float)));
  return p;
}

double copyBandwidth() { // bytes read + written a second, best of 5
  const size_t n = 1ull << 30;
  void *a, *b;
  CHECK(cudaMalloc(&a, n));
  CHECK(cudaMalloc(&b, n));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int i = 0; i < 6; ++i) {
    CHECK(cudaEventRecord(e0));
    CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0)
      best = std::min(best, ms);
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return 2.0 * n / (best * 1e-3);
}

int tokenAt(int step) { return (int)((step * 7919LL + 13) % V); }

} // namespace

int main(int argc, char **argv) {
  int L = 22, prompt = 128, steps = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--layers" && next)
      L = std::atoi(argv[++i]);
    else if (a == "--prompt" && next)
      prompt = std::atoi(argv[++i]);
    else if (a == "--steps" && next)
      steps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: step_lab [--layers N] [--prompt N] [--steps N]\n");
      return 2;
    }
  }
  // The timing's 8 warm-up steps run at positions prompt..prompt + 7 too.
  if (L < 1 || L > 64 || prompt < 1 || steps < 1 || prompt + std::max(steps, 8) > MAXCTX) {
    std::fprintf(stderr, "step_lab: layers 1..64, prompt + max(steps, 8) <= %d\n", MAXCTX);
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const double bw = copyBandwidth();

  // Weights (uniform, variance 1/K a row so activations stay near 1), norms
  // near 1, the cache's prompt positions random; two caches (persistent, reference).
  std::vector<Layer> layers(L), refLayers(L);
  const float a2048 = std::sqrt(3.f / D), a5632 = std::sqrt(3.f / F);
  const long long cacheN = (long long)KVH * MAXCTX * HD;
  for (int l = 0; l < L; ++l) {
    Layer &ly = layers[l];
    const unsigned long long s = 100 + 10 * l;
    ly.wqkv = newHalf((long long)QKV * D, s + 1, a2048);
    ly.wo = newHalf((long long)D * D, s + 2, a2048);
    ly.wgu = newHalf(2LL * F * D, s + 3, a2048);
    ly.wd = newHalf((long long)D * F, s + 4, a5632);
    ly.n1 = newHalf(D, s + 5, 0.1f, 1.f);
    ly.n2 = newHalf(D, s + 6, 0.1f, 1.f);
    ly.kc = newHalf(cacheN, s + 7, 1.f);
    ly.vc = newHalf(cacheN, s + 8, 1.f);
    refLayers[l] = ly;
    refLayers[l].kc = newHalf(cacheN, s + 7, 1.f);
    refLayers[l].vc = newHalf(cacheN, s + 8, 1.f);
  }
  Model m{};
  m.L = L;
  m.barriers = kBarriersPerLayer * L + kBarriersAfterLayers;
  m.lm = newHalf((long long)V * D, 7, 1.f);
  m.nf = newHalf(D, 8, 0.1f, 1.f);
  {
    std::vector<float> c(MAXCTX * HD / 2), sn(MAXCTX * HD / 2);
    for (int p = 0; p < MAXCTX; ++p)
      for (int i = 0; i < HD / 2; ++i) {
        const double f = p * std::pow(10000.0, -2.0 * i / HD);
        c[p * HD / 2 + i] = (float)std::cos(f);
        sn[p * HD / 2 + i] = (float)std::sin(f);
      }
    float *dc = newFloats(c.size()), *ds = newFloats(sn.size());
    CHECK(cudaMemcpy(dc, c.data(), c.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(ds, sn.data(), sn.size() * 4, cudaMemcpyHostToDevice));
    m.cosT = dc;
    m.sinT = ds;
  }
  Layer *dl;
  CHECK(cudaMalloc(&dl, L * sizeof(Layer)));
  CHECK(cudaMemcpy(dl, layers.data(), L * sizeof(Layer), cudaMemcpyHostToDevice));
  m.layers = dl;
  Model rm = m; // the reference's model: its own caches (refLayers, on the host)

  State s{};
  s.x = newFloats(D);
  s.qkv = newFloats(QKV);
  s.attn = newFloats(D);
  s.attnPart = newFloats(H * PARTS * (HD + 1));
  s.gu = newFloats(2 * F);
  s.logits = newFloats(V);
  CHECK(cudaMalloc(&s.token, 4));
  CHECK(cudaMalloc(&s.ctr, 8));
  CHECK(cudaMemset(s.ctr, 0, 8));
  CHECK(cudaMalloc(&s.stamps, 16 * (m.barriers + 1)));
  RefState r{newFloats(D),     newFloats(D), newFloats(QKV), newFloats(D),
             newFloats(2 * F), newFloats(F), newFloats(V),   nullptr};
  CHECK(cudaMalloc(&r.token, 4));
  CHECK(cudaDeviceSynchronize());

  // The kernel's shapes: registers (16 warps, 8 words a lane in flight:
  // 64 KB an SM), and the ring with 8 or 12 slots of 16 KB (128 or 192 KB an
  // SM in flight, across barriers). One block an SM, all resident (a
  // cooperative launch refuses otherwise).
  struct Variant {
    const void *fn;
    int threads, smem;
    const char *name;
    bool split;               // needs H * PARTS blocks
    bool timingOnly = false;  // its results are not the step's (no check)
    bool gridBarriers = true; // meets at the grid barriers (advances the counter; block 0 stamps them)
  };
  const int grid = prop.multiProcessorCount;
  std::vector<Variant> variants;
  for (const Variant &v : {
           Variant{(const void *)stepRegisters<8, 512, false>, 512, 0, "registers, 64 KB an SM", false},
           Variant{(const void *)stepRegisters<8, 512, true>, 512, 0, "registers, split attention", true},
           Variant{(const void *)stepRing<8, false>, 544, 8 * STAGE_BYTES, "ring, 8 x 16 KB", false},
           Variant{(const void *)stepRing<12, true>, 544, 12 * STAGE_BYTES, "ring, 12 x 16 KB, split attention", true},
           Variant{(const void *)stepRegisters<8, 512, false, false>, 512, 0,
                   "registers, no grid barriers (timing only)", false, true, false},
           Variant{(const void *)stepBarriersOnly, 512, 0, "the grid barriers alone (timing only)", false, true},
       })
    if (!v.split || grid >= H * PARTS)
      variants.push_back(v);
  for (const Variant &v : variants) {
    if (v.smem)
      CHECK(cudaFuncSetAttribute(v.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    int perSM = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, v.fn, v.threads, v.smem));
    if (perSM < 1) {
      std::fprintf(stderr, "step_lab: the kernel (%s) does not fit an SM\n", v.name);
      return 1;
    }
  }
  if ((V + grid - 1) / grid + 2 > MAX_BLOCK_ROWS || grid < H) {
    std::fprintf(stderr, "step_lab: %d SMs: too few for a block's rows of the LM head or the query heads\n", grid);
    return 1;
  }
  unsigned long long launches = 0;
  const unsigned long long barriers = (unsigned long long)(kBarriersPerLayer * L + kBarriersAfterLayers) * grid;
  auto persistent = [&](const Variant &v, int tok, int pos, cudaStream_t st) {
    unsigned long long base = launches * barriers;
    launches += v.gridBarriers; // the counter moves only with the barriers
    void *args[] = {&m, &s, &tok, &pos, &base};
    CHECK(cudaLaunchCooperativeKernel(v.fn, grid, v.threads, args, v.smem, st));
  };

  std::printf("step_lab: %s, %d SMs, copy bandwidth %.3f TB/s (read + write); %d layers, positions %d..%d\n", prop.name,
              grid, bw / 1e12, L, prompt, prompt + steps - 1);
  // The check: every step's logits and token, each shape against the
  // reference (both rewrite the same cache rows with the same values).
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));
  std::vector<float> a(V), b(V);
  bool ok = true;
  for (const Variant &v : variants) {
    if (v.timingOnly)
      continue;
    double worst = 0.0;
    int same = 0;
    float minMargin = 1e30f;
    for (int t = 0; t < steps; ++t) {
      persistent(v, tokenAt(t), prompt + t, st);
      referenceStep(refLayers, rm, r, tokenAt(t), prompt + t, st);
      CHECK(cudaStreamSynchronize(st));
      CHECK(cudaMemcpy(a.data(), s.logits, V * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(b.data(), r.logits, V * 4, cudaMemcpyDeviceToHost));
      int ta, tb;
      CHECK(cudaMemcpy(&ta, s.token, 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(&tb, r.token, 4, cudaMemcpyDeviceToHost));
      double dmax = 0.0, ref = 0.0;
      for (int i = 0; i < V; ++i) {
        const double d = std::fabs((double)a[i] - b[i]);
        dmax = std::isnan(d) || d > dmax ? (std::isnan(d) ? INFINITY : d) : dmax;
        ref = std::max(ref, (double)std::fabs(b[i]));
      }
      worst = std::max(worst, dmax / std::max(ref, 1e-30));
      same += ta == tb;
      std::vector<float> sorted(b);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
      minMargin = std::min(minMargin, sorted[0] - sorted[1]);
    }
    const bool vok = worst < 1e-3 && same == steps;
    ok = ok && vok;
    std::printf("check, %s: %s — %d steps, argmax equal %d/%d (smallest top-2 margin %.3g), "
                "max |logit diff| / max |logit| %.2e\n",
                v.name, vok ? "ok" : "FAIL", steps, same, steps, minMargin, worst);
  }

  // The floor: weights and the K/V read at the mean context, once a step.
  const double layerWeights = (double)QKV * D + (double)D * D + 2.0 * F * D + (double)D * F + 2.0 * D;
  const double weightBytes = 2.0 * (L * layerWeights + (double)V * D + D);
  const double kvBytes = 2.0 * L * KVH * HD * 2.0 * (prompt + (steps + 1) / 2.0);
  const double floorMs = (weightBytes + kvBytes) / bw * 1e3;
  std::printf("floor: %.3f ms a step (%.3f GB of weights, %.2f MB of K/V at the mean context)\n\n", floorMs,
              weightBytes / 1e9, kvBytes / 1e6);

  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  auto timeIt = [&](auto &&step) {
    for (int t = 0; t < 8; ++t)
      step(t); // warm-up
    CHECK(cudaEventRecord(e0, st));
    for (int t = 0; t < steps; ++t)
      step(t);
    CHECK(cudaEventRecord(e1, st));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / steps;
  };
  std::printf("| variant | ms a step | of the floor |\n|---|---|---|\n");
  // Where the last timed step went, by block 0's stamps: a phase runs from
  // its barrier's departure to the next barrier's arrival (block 0 busy),
  // then waits there for the grid (the others, and the barrier itself).
  std::vector<std::string> breakdowns;
  for (const Variant &v : variants) {
    const float ms = timeIt([&](int t) { persistent(v, tokenAt(t), prompt + t, st); });
    std::printf("| persistent kernel, %s | %.3f | %.0f%% |\n", v.name, ms, 100.0 * floorMs / ms);
    if (!v.gridBarriers)
      continue;
    std::vector<unsigned long long> t(2 * (m.barriers + 1));
    CHECK(cudaMemcpy(t.data(), s.stamps, t.size() * 8, cudaMemcpyDeviceToHost));
    double busy[6] = {}, wait[6] = {};
    for (int k = 1; k < m.barriers; ++k) { // the phase after barrier k
      const int kind = k == m.barriers - 1 ? 5 : k % 5;
      busy[kind] += (t[2 * (k + 1)] - t[2 * k + 1]) * 1e-3;
      wait[kind] += (t[2 * (k + 1) + 1] - t[2 * (k + 1)]) * 1e-3;
    }
    char line[512];
    std::snprintf(line, sizeof line, "| %s |", v.name);
    std::string row = line;
    for (int kind : {1, 2, 3, 4, 0, 5}) {
      const int n = kind == 5 ? 1 : L;
      std::snprintf(line, sizeof line, " %.1f + %.1f |", busy[kind] / std::max(n, 1), wait[kind] / std::max(n, 1));
      row += line;
    }
    breakdowns.push_back(row);
  }
  const float refMs = timeIt([&](int t) { referenceStep(refLayers, rm, r, tokenAt(t), prompt + t, st); });
  std::printf("| reference, one plain kernel an op (%d launches) | %.3f | %.0f%% |\n", 10 * L + 4, refMs,
              100.0 * floorMs / refMs);
  std::printf("\nblock 0's last step, µs a phase (busy + waiting at the next barrier), mean over layers:\n\n"
              "| variant | qkv | attention | o | gate/up | down | LM head |\n|---|---|---|---|---|---|---|\n");
  for (const std::string &b : breakdowns)
    std::printf("%s\n", b.c_str());
  CHECK(cudaDeviceSynchronize());
  return ok ? 0 : 1;
}
