#include "codegen/StepKernelTemplates.h"

namespace genc {

// The step kernel's fixed parts, pasted after the attention code (whose
// decode and merge routines the attention items call through the block
// policy GencStepBlock) and the ABI (runtime/cuda/StepAbi.h). The generated
// parts (the routines and the dispatch) follow them.
const char *stepKernelTemplates() {
  return R"(// ---- genc step kernel ------------------------------------------------------
// An attention item's block coordinates: (token, head part or head, split,
// splits), set by thread 0 before each call (codegen/AttentionDecode.cpp).
__shared__ unsigned genc_step_vb[4];
struct GencStepBlock {
  static __device__ __forceinline__ unsigned x() { return genc_step_vb[0]; }
  static __device__ __forceinline__ unsigned y() { return genc_step_vb[1]; }
  static __device__ __forceinline__ unsigned z() { return genc_step_vb[2]; }
  static __device__ __forceinline__ unsigned nz() { return genc_step_vb[3]; }
  static __device__ __forceinline__ unsigned splits(const GencAttnParams &) { return genc_step_vb[3]; }
};
static __device__ __forceinline__ void genc_step_at(unsigned x, unsigned y, unsigned z, unsigned n) {
  __syncthreads(); // the last call is done with the coordinates and its shared memory
  if (threadIdx.x == 0) {
    genc_step_vb[0] = x;
    genc_step_vb[1] = y;
    genc_step_vb[2] = z;
    genc_step_vb[3] = n;
  }
  __syncthreads();
}

static __device__ __forceinline__ unsigned genc_smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
// Loads of what other blocks wrote in this launch: through L2, never a
// read-only or stale L1 line (the wait before them was an acquire).
static __device__ __forceinline__ uint4 genc_ld_cg4(const void *p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
static __device__ __forceinline__ unsigned genc_ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
static __device__ __forceinline__ unsigned long long genc_step_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- the weight ring --------------------------------------------------------
// PAGES pages of PAGE bytes in dynamic shared memory, each with an mbarrier
// that a page's bulk copies complete. Page i of the block's stream (its
// Matvec items' pages in list order) goes to slot i % PAGES; thread 0 issues
// it once page i - PAGES has been consumed (all threads past the barrier
// that ends it), so PAGES pages are always in flight ahead of the consumer.
struct GencStepRing {
  unsigned char *base;
  unsigned long long *full;
  int consumed;       // pages the block has consumed (every thread counts)
  int issued;         // thread 0: pages issued
  int at, page;       // thread 0: the next page to issue: list position, page of its item
};

static __device__ __forceinline__ long long genc_step_pages_of(const GencStepOp &o, const GencStepItem &it) {
  return o.kind == 0 ? (it.count + o.mv.rowsPerPage - 1) / o.mv.rowsPerPage : 0;
}

template <int PAGES, long long PAGE>
static __device__ void genc_step_issue(GencStepRing &r, const GencStepParams &sp, int last) {
  const GencStepOp *ops = (const GencStepOp *)sp.ops;
  const GencStepItem *items = (const GencStepItem *)sp.items;
  const int *order = (const int *)sp.order;
  while (r.issued < r.consumed + PAGES) {
    const GencStepOp *o = nullptr;
    GencStepItem it;
    for (; r.at < last; ++r.at, r.page = 0) {
      it = items[order[r.at]];
      o = ops + it.op;
      if (r.page < genc_step_pages_of(*o, it)) break;
    }
    if (r.at >= last) return;
    const GencStepMatvec &m = o->mv;
    const long long n0 = it.first + (long long)r.page * m.rowsPerPage;
    const long long rows = min(m.rowsPerPage, (long long)(it.first + it.count) - n0);
    const long long bytes = rows * m.rowBytes;
    const bool glu = m.glu != 0;
    const int slot = r.issued % PAGES;
    unsigned char *dst = r.base + (long long)slot * PAGE;
    const unsigned bar = genc_smem_addr(r.full + slot);
    // Generic-proxy reads of the slot (the last page's) before the async
    // proxy writes it.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"((unsigned)(glu ? 2 * bytes : bytes))
                 : "memory");
    const unsigned char *w = (const unsigned char *)m.w;
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     genc_smem_addr(dst)),
                 "l"(w + n0 * m.rowBytes), "r"((unsigned)bytes), "r"(bar)
                 : "memory");
    if (glu) // the up rows after the gate rows: weight rows N/2 + n
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       genc_smem_addr(dst + bytes)),
                   "l"(w + (m.N / 2 + n0) * m.rowBytes), "r"((unsigned)bytes), "r"(bar)
                   : "memory");
    ++r.page;
    ++r.issued;
  }
}

// Thread 0's SM cycles spent waiting for pages in the current item
// (GENC_CUDA_STEP_TRACE: data starvation against the rest of the work).
__shared__ long long genc_step_starved;
// ... and issuing the next pages' copies.
__shared__ long long genc_step_issuing;

// The next page in the block's stream, once its copies have landed.
template <int PAGES, long long PAGE>
static __device__ __forceinline__ const unsigned char *genc_step_page(GencStepRing &r) {
  const int slot = r.consumed % PAGES;
  const unsigned parity = (unsigned)(r.consumed / PAGES) & 1u, bar = genc_smem_addr(r.full + slot);
  unsigned ok = 0;
  const long long c0 = threadIdx.x == 0 ? clock64() : 0;
  while (!ok)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
  if (threadIdx.x == 0) genc_step_starved += clock64() - c0;
  return r.base + (long long)slot * PAGE;
}

// Every thread is done with the page: its slot takes the stream's next.
template <int PAGES, long long PAGE>
static __device__ __forceinline__ void genc_step_release(GencStepRing &r, const GencStepParams &sp, int last) {
  __syncthreads();
  ++r.consumed;
  if (threadIdx.x == 0) {
    const long long c0 = clock64();
    genc_step_issue<PAGES, PAGE>(r, sp, last);
    genc_step_issuing += clock64() - c0;
  }
}

// ---- a matrix-vector product over pages --------------------------------------
// x [K] (A's storage) in shared memory; a page holds R outputs' weight rows
// [R][K] (W's storage), with a GLU the gate rows then the up rows [2R][K].
// Warps share a row where a page has fewer than 4 rows (4 / rows of them,
// each a part of K); each sums 16-byte words lane by lane, then across the
// warp; the parts meet in `red`. EPI writes output n from (gate, up) sums.
template <typename A, typename W, int PAGES, long long PAGE, typename EPI>
static __device__ void genc_step_matvec(GencStepRing &r, const GencStepParams &sp, int last, const GencStepMatvec &m,
                                        const GencStepItem &it, const typename A::S *xs, float *red) {
  typedef typename W::S WS;
  constexpr int V = 16 / (int)sizeof(WS);
  static_assert(sizeof(typename A::S) == sizeof(WS), "step matvec: x and the weight in words of one width");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long KW = m.K / V;
  const long long end = (long long)it.first + it.count;
  for (long long n0 = it.first; n0 < end; n0 += m.rowsPerPage) {
    const int R = (int)min(m.rowsPerPage, end - n0), RR = EPI::GLU ? 2 * R : R;
    const uint4 *page = (const uint4 *)genc_step_page<PAGES, PAGE>(r);
    const int wpr = RR >= 4 ? 1 : 4 / RR; // warps a row
    const int part = warp % wpr;
    for (int row = warp / wpr; row < RR; row += 4 / wpr) {
      const uint4 *wr = page + (long long)row * KW;
      float acc = 0.f;
      for (long long k = (long long)part * 32 + lane; k < KW; k += 32 * wpr) {
        const uint4 wv = wr[k], xv = ((const uint4 *)xs)[k];
        const WS *we = (const WS *)&wv;
        const typename A::S *xe = (const typename A::S *)&xv;
#pragma unroll
        for (int i = 0; i < V; ++i) acc += A::ld(xe[i]) * W::ld(we[i]);
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) red[row * 4 + part] = acc;
    }
    __syncthreads();
    if (tid < R) {
      float g = 0.f, u = 0.f;
      for (int p = 0; p < wpr; ++p) g += red[tid * 4 + p];
      if (EPI::GLU)
        for (int p = 0; p < wpr; ++p) u += red[(R + tid) * 4 + p];
      EPI::store(m, n0 + tid, g, u);
    }
    genc_step_release<PAGES, PAGE>(r, sp, last);
  }
}

// The input row of a product without a prologue: from where the op before
// wrote it, through L2.
template <typename A>
static __device__ __forceinline__ void genc_step_row_in(typename A::S *xs, const GencStepMatvec &m) {
  constexpr int V = 16 / (int)sizeof(typename A::S);
  for (long long k = threadIdx.x; k < m.K / V; k += blockDim.x)
    ((uint4 *)xs)[k] = genc_ld_cg4((const uint4 *)m.a + k);
}

// Thread 0 waits until each of the op's waits has reached its count; false
// (and the error written, once) where one passes the timeout or another
// block has failed.
static __device__ bool genc_step_wait(const GencStepParams &sp, const GencStepWaits &w, int item, int op) {
  const unsigned *counters = (const unsigned *)sp.counters;
  GencStepError *err = (GencStepError *)sp.error;
  for (int i = 0; i < w.n; ++i) {
    const unsigned need = (unsigned)w.need[i];
    unsigned have = genc_ld_acquire(counters + w.counter[i]);
    if (have >= need) continue;
    const unsigned long long start = genc_step_now();
    for (int spin = 0; (have = genc_ld_acquire(counters + w.counter[i])) < need; ++spin) {
      if ((spin & 255) == 255) {
        if (*(volatile unsigned *)&err->code) return false;
        if ((long long)(genc_step_now() - start) > sp.timeoutNs) {
          if (atomicCAS(&err->code, 0u, 1u) == 0u) {
            err->item = item;
            err->op = op;
            err->counter = w.counter[i];
            err->have = have;
            err->need = need;
            __threadfence();
          }
          return false;
        }
      }
      __nanosleep(32);
    }
  }
  return true;
}
)";
}

} // namespace genc
