#include "codegen/StepKernelTemplates.h"

namespace genc {

// The step kernel's fixed parts, pasted after the attention code (whose
// decode and merge routines the attention items call through the block
// policy GencStepBlock) and the ABI (runtime/cuda/StepAbi.h). The generated
// parts (the routines and the dispatch) follow them.
const char *stepKernelTemplates() {
  return R"(// ---- genc step kernel ------------------------------------------------------
// The block: GENC_STEP_THREADS compute threads (4 or 7 warps), then the copy
// warp, which only streams the weight pages into the ring. The compute
// warps meet on named barrier 2, which the copy warp never joins; a row
// body's block sums and maxima are theirs (codegen/CudaKernelLoops.cpp's
// step copy calls these in place of genc_block_sum and genc_block_max; the
// same warp order, so the same values).
// GENC_STEP_SYNC_CHECK: each compute warp counts its arrivals, and the
// kernel checks after every item that they agree (a warp a barrier ahead of
// the others would pair its barriers with theirs wrongly).
__shared__ unsigned genc_step_nsync[GENC_STEP_THREADS / 32];
static __device__ __forceinline__ void genc_step_sync() {
  if (GENC_STEP_SYNC_CHECK && (threadIdx.x & 31) == 0) ++genc_step_nsync[threadIdx.x >> 5];
  asm volatile("bar.sync 2, %0;" ::"n"(GENC_STEP_THREADS) : "memory");
}
struct GencStepSync {
  static __device__ __forceinline__ void sync() { genc_step_sync(); }
};
static __device__ __forceinline__ float genc_step_block_sum(float v, float *red) {
  return genc_block_sum_of<GencStepSync>(v, red, GENC_STEP_THREADS / 32);
}
static __device__ __forceinline__ float genc_step_block_max(float v, float *red) {
  return genc_block_max_of<GencStepSync>(v, red, GENC_STEP_THREADS / 32);
}

// GENC_STEP_SYNC_CHECK: thread 0, after the barrier that follows item
// `item`: did every compute warp pass as many barriers? The first item
// where they differ is printed, once a block.
static __device__ void genc_step_sync_check(const unsigned *after, int *off, int item) {
  for (int w = 1; w < GENC_STEP_THREADS / 32; ++w)
    if (after[w] != after[0]) {
      printf("genc step: block %d after item %d: warp 0 passed %u barriers, warp %d %u\n", (int)blockIdx.x, item,
             after[0], w, after[w]);
      *off = 1;
      return;
    }
}

// An attention item's block coordinates: (token, head part or head, split,
// splits), set by thread 0 before each call (codegen/AttentionDecode.cpp).
__shared__ unsigned genc_step_vb[4];
struct GencStepBlock {
  static __device__ __forceinline__ unsigned x() { return genc_step_vb[0]; }
  static __device__ __forceinline__ unsigned y() { return genc_step_vb[1]; }
  static __device__ __forceinline__ unsigned z() { return genc_step_vb[2]; }
  static __device__ __forceinline__ unsigned nz() { return genc_step_vb[3]; }
  static __device__ __forceinline__ unsigned splits(const GencAttnParams &) { return genc_step_vb[3]; }
  // A decode routine runs on the first four warps (its code is written for
  // 128 threads), which meet on named barrier 1 (as genc_attn_sync), the
  // others waiting at the item's end; a merge runs on every compute warp.
  static __device__ __forceinline__ void sync() { genc_attn_sync(); }
  static __device__ __forceinline__ void msync() { genc_step_sync(); }
};
static __device__ __forceinline__ void genc_step_at(unsigned x, unsigned y, unsigned z, unsigned n) {
  genc_step_sync(); // the last call is done with the coordinates and its shared memory
  if (threadIdx.x == 0) {
    genc_step_vb[0] = x;
    genc_step_vb[1] = y;
    genc_step_vb[2] = z;
    genc_step_vb[3] = n;
  }
  genc_step_sync();
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

// The current item's SM cycles (GENC_CUDA_STEP_TRACE): the compute warps'
// waits for their pages and their pages' computing, summed over the warps'
// lane 0s; the copy warp's waits for a free slot (a full ring: the pages
// arrive faster than they are computed).
__shared__ long long genc_step_starved, genc_step_ringfull, genc_step_computing;
// and the compute warps' waits for their pages to be issued at all (the
// copy warp waiting for a slot; GENC_STEP_TEAM_RELEASE), summed likewise
__shared__ long long genc_step_unissued;
// and thread 0's cycles from the item's start to its product's (the row op
// before it: the prologue), and the compute warps' arrivals at the item's
// closing barrier (their clocks summed)
__shared__ long long genc_step_c1, genc_step_prologue, genc_step_arrived;
static __device__ __forceinline__ void genc_step_count(long long *to, long long c0) {
  atomicAdd((unsigned long long *)to, (unsigned long long)(clock64() - c0));
}

// ---- the weight ring --------------------------------------------------------
// PAGES pages of PAGE bytes in dynamic shared memory. Page i of the block's
// stream (its Matvec items' pages in list order) goes to slot i % PAGES and
// to a team of the compute warps (one warp, or several sharing its outputs:
// per item, genc_step_matvec_mma): `full` completes when its bulk copies
// land, `empty` when its team has computed it (GENC_STEP_TEAM_RELEASE: the
// team's first warp arrives for the warps outside the team, which skip the
// page; else every compute warp waits for `full` and arrives, the team's
// after computing it, so no warp's arrival can count for a later page).
// The copy warp issues page i the moment page i - PAGES is empty, whatever
// the compute warps are doing: the next items' weights stream in while
// the block computes, waits for an op before it, or runs attention.
struct GencStepRing {
  unsigned char *base;
  unsigned long long *full, *empty;
  int consumed;         // pages of the stream the block has gone past (every compute thread counts)
  volatile int *issued; // pages the copy warp has issued (read where GENC_STEP_TEAM_RELEASE)
};

static __device__ __forceinline__ bool genc_mbar_try(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
               : "=r"(ok)
               : "r"(bar), "r"(parity)
               : "memory");
  return ok != 0;
}

// An mbarrier wait of the ring with a bound: a page or a slot that never
// comes is a bug of the kernel, which then ends the launch (an error genrun
// reports) rather than hanging the GPU.
static __device__ __forceinline__ void genc_mbar_wait(unsigned bar, unsigned parity) {
  if (genc_mbar_try(bar, parity)) return;
  const unsigned long long start = genc_step_now();
  for (unsigned spin = 1; !genc_mbar_try(bar, parity); ++spin)
    if ((spin & 1023) == 0 && genc_step_now() - start > 4000000000ull) __trap();
}

// The block's weight pages in the copy warp's order, one at a time: item k
// of its list, rows n0 .. of it (GENC_STEP_L2_AHEAD's cursor, some pages
// ahead of the copies into the ring).
struct GencStepPageCursor {
  const GencStepOp *ops;
  const GencStepItem *items;
  const int *order;
  int k, last;
  long long n0, end;
  // to the first page at or after (k, n0), n0 < 0 meaning item k's first
  __device__ void seek() {
    for (; k < last; ++k, n0 = -1) {
      const GencStepItem it = items[order[k]];
      if (ops[it.op].kind != 0 || it.count <= 0) continue;
      if (n0 < 0) n0 = it.first;
      end = (long long)it.first + it.count;
      if (n0 < end) return;
    }
  }
  // L2 prefetches of this page's rows (a GLU's up rows too), then the next page
  __device__ void prefetchAndStep() {
    if (k >= last) return;
    const GencStepOp &o = ops[items[order[k]].op];
    const long long rows = min(o.mv.rowsPerPage, end - n0), bytes = rows * o.mv.rowBytes;
    const unsigned char *w = (const unsigned char *)o.mv.w;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(w + n0 * o.mv.rowBytes), "r"((unsigned)bytes) : "memory");
    if (o.mv.glu)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(w + (o.mv.N / 2 + n0) * o.mv.rowBytes),
                   "r"((unsigned)bytes)
                   : "memory");
    n0 += o.mv.rowsPerPage;
    seek();
  }
};

// The copy warp's lane 0: the block's list in order, each Matvec item's
// pages (a GLU's gate rows, then its up rows N/2 + n, into one page), each
// once its slot is empty. A block whose compute warps stopped (a failed
// wait: `stop`) frees no more slots: the copies stop, and those in flight
// land before the block leaves (its shared memory is their destination).
template <int PAGES, long long PAGE>
static __device__ void genc_step_produce(const GencStepRing &r, const GencStepParams &sp, int first, int last,
                                         const volatile int *stop) {
  const GencStepOp *ops = (const GencStepOp *)sp.ops;
  const GencStepItem *items = (const GencStepItem *)sp.items;
  const int *order = (const int *)sp.order;
  int issued = 0;
  bool stopped = false;
  // GENC_STEP_L2_AHEAD: the pages that many ahead of the ring's are asked of
  // L2 (a prefetch keeps no slot and brings nothing back to the SM), so a
  // small ring still finds its pages in L2 while the bytes in flight to
  // the SM stay few.
  GencStepPageCursor ahead{ops, items, order, first, last, -1, 0};
  if (GENC_STEP_L2_AHEAD) {
    ahead.seek();
    for (int a = 0; a < GENC_STEP_L2_AHEAD; ++a) ahead.prefetchAndStep();
  }
  for (int k = first; k < last && !stopped; ++k) {
    const GencStepItem it = items[order[k]];
    const GencStepOp &o = ops[it.op];
    if (o.kind != 0 || it.count <= 0) continue;
    const unsigned char *w = (const unsigned char *)o.mv.w;
    const long long rowBytes = o.mv.rowBytes, rpp = o.mv.rowsPerPage, half = o.mv.glu ? o.mv.N / 2 : 0;
    const long long end = (long long)it.first + it.count;
    for (long long n0 = it.first; n0 < end; n0 += rpp, ++issued) {
      const int slot = issued % PAGES;
      if (issued >= PAGES) {
        const unsigned bar = genc_smem_addr(r.empty + slot), parity = (unsigned)(issued / PAGES - 1) & 1u;
        if (!genc_mbar_try(bar, parity)) {
          const long long c0 = sp.trace ? clock64() : 0;
          const unsigned long long start = genc_step_now();
          for (unsigned spin = 1; !genc_mbar_try(bar, parity); ++spin)
            if ((spin & 255) == 0) {
              if (*stop) {
                stopped = true;
                break;
              }
              if (genc_step_now() - start > 4000000000ull) __trap();
            }
          if (sp.trace) atomicAdd((unsigned long long *)&genc_step_ringfull, (unsigned long long)(clock64() - c0));
          if (stopped) break;
        }
      }
      if (GENC_STEP_L2_AHEAD) ahead.prefetchAndStep();
      const long long rows = min(rpp, end - n0), bytes = rows * rowBytes;
      unsigned char *dst = r.base + (long long)slot * PAGE;
      const unsigned bar = genc_smem_addr(r.full + slot);
      // No proxy fence: the compute warps' reads of the slot's last page are
      // ordered before this copy's writes by their arrivals on `empty` and
      // this thread's wait on it (a fence.proxy.async here measured as
      // waiting for the copies in flight, which made the ring one page deep).
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                   "r"((unsigned)(half ? 2 * bytes : bytes))
                   : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                       genc_smem_addr(dst)),
                   "l"(w + n0 * rowBytes), "r"((unsigned)bytes), "r"(bar)
                   : "memory");
      if (half)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         genc_smem_addr(dst + bytes)),
                     "l"(w + (half + n0) * rowBytes), "r"((unsigned)bytes), "r"(bar)
                     : "memory");
      if (GENC_STEP_TEAM_RELEASE) atomicExch((int *)r.issued, issued + 1);
    }
  }
  // The last page issued into each slot lands before the block leaves.
  for (int p = issued > PAGES ? issued - PAGES : 0; p < issued; ++p)
    genc_mbar_wait(genc_smem_addr(r.full + p % PAGES), (unsigned)(p / PAGES) & 1u);
}

// Page p of the stream, once its copies have landed.
template <int PAGES, long long PAGE>
static __device__ __forceinline__ const unsigned char *genc_step_page(const GencStepRing &r, bool trace, int p) {
  const int slot = p % PAGES;
  const unsigned parity = (unsigned)(p / PAGES) & 1u, bar = genc_smem_addr(r.full + slot);
  const bool count = (threadIdx.x & 31) == 0 && trace;
  const long long c0 = count ? clock64() : 0;
  genc_mbar_wait(bar, parity);
  if (count) genc_step_count(&genc_step_starved, c0);
  return r.base + (long long)slot * PAGE;
}

// This warp is done with page p: its arrival on the slot's `empty`, worth
// `count` of the compute warps' (a team's first warp counts for the warps
// outside the team, which never touch the page).
template <int PAGES, long long PAGE>
static __device__ __forceinline__ void genc_step_release(const GencStepRing &r, int p, unsigned count = 1) {
  __syncwarp();
  if ((threadIdx.x & 31) == 0)
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(genc_smem_addr(r.empty + p % PAGES)), "r"(count)
                 : "memory");
}

// Page p of the stream for its team only (GENC_STEP_TEAM_RELEASE): the other
// warps skip it, so a warp has not seen the slot's earlier pages land, and
// a parity wait alone could take page p - PAGES's phase for p's. Once the
// copy warp has issued p, page p - PAGES has been released (it landed), so
// the slot's pending phase is p's: the parity wait is exact.
template <int PAGES, long long PAGE>
static __device__ __forceinline__ const unsigned char *genc_step_own_page(const GencStepRing &r, bool trace, int p) {
  // Lane 0 reads the count (an atomic: a flag between warps that no
  // barrier orders), the warp's lanes then wait on `full` themselves. The
  // trace counts the wait for the page's issue as a wait for the page
  // (GENC_CUDA_STEP_TRACE's `issued` share: the ring full of earlier pages).
  if ((threadIdx.x & 31) == 0 && atomicOr((int *)r.issued, 0) <= p) {
    const long long c0 = trace ? clock64() : 0;
    const unsigned long long start = genc_step_now();
    for (unsigned spin = 1; atomicOr((int *)r.issued, 0) <= p; ++spin)
      if ((spin & 1023) == 0 && genc_step_now() - start > 4000000000ull) __trap();
    if (trace) {
      genc_step_count(&genc_step_unissued, c0);
      genc_step_count(&genc_step_starved, c0);
    }
  }
  __syncwarp();
  return genc_step_page<PAGES, PAGE>(r, trace, p);
}

// ---- a matrix-vector product on tensor cores ---------------------------------
// mma.m16n8k16 with f32 sums, the weights as B. A group's 8 columns are a
// page's rows cut into S segments (column g: row g / S, segment g % S; with a
// GLU: pair g / 2S, gate or up (g / S) & 1, segment g % S); A's 16 rows are the
// step's rows cut the same way (A row m: row m / S, segment m % S), so
// D[m][n] is a row's segment against a weight row's where their segments
// agree, and the rest of D is discarded. A dot product does not care in what
// order its k come, so lane (g, q) reads 8 contiguous elements of its column
// and of its two A rows at the same k and feeds them as two k16 tiles: one
// 16-byte load of weights per 8 elements and no conversion, where the CUDA
// cores need a conversion and a multiply-add an element. S is chosen per page
// for the fewest tile loads (a page of one long row cuts it in 8; 8 short
// rows or more take S = 1 and up to 16 step rows an mma).
template <typename W> struct genc_mma_of {
  static constexpr bool OK = false;
  static __device__ __forceinline__ void tile(float (&)[4], unsigned, unsigned, unsigned, unsigned, unsigned, unsigned) {}
};
// d += [xl; xh] . b over one k16 tile (a0..a3: A's four words, b0 b1: B's two)
template <> struct genc_mma_of<genc_f16> {
  static constexpr bool OK = true;
  static __device__ __forceinline__ void tile(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                              unsigned b1) {
    genc_mma<genc_f16>::run(d, a0, a1, a2, a3, b0, b1);
  }
};
template <> struct genc_mma_of<genc_bf16> {
  static constexpr bool OK = true;
  static __device__ __forceinline__ void tile(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                              unsigned b1) {
    genc_mma<genc_bf16>::run(d, a0, a1, a2, a3, b0, b1);
  }
};
template <typename A, typename B> struct genc_same { static constexpr bool V = false; };
template <typename A> struct genc_same<A, A> { static constexpr bool V = true; };

// Each warp's D of one group [16][8], for the sums over segments.
__shared__ float genc_step_d[GENC_STEP_THREADS / 32][128];

// The windows of one group and one chunk of step rows, summed into the
// warp's scratch dsc: two chains of dependent mma (windows 0, 2, ... and
// 1, 3, ...), four windows' loads ahead.
// w: this lane's column, 4 words a window; xl / xh: its two A rows, each a
// shared-memory address (a generic pointer into a function the compiler
// cannot see through would make every load a generic one). HI: the A rows
// 8..15 hold step rows (else xh is never read). One copy for every routine
// of the kernel (not inlined): the kernel's code is larger than an SM's
// instruction cache, and each routine's own copy was fetched again at every
// item.
static __device__ __forceinline__ uint4 genc_lds4(unsigned a) {
  uint4 v;
  asm("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}
template <typename W, bool HI>
static __device__ __noinline__ void genc_step_windows(unsigned w, unsigned xl, unsigned xh, int windows, float *dsc) {
  // two chains of mma (windows 0, 2, ... and 1, 3, ...): four and eight
  // chains measured the same, with more registers (docs/step-kernel.md)
  constexpr int CH = 2;
  float d[CH][4];
#pragma unroll
  for (int c = 0; c < CH; ++c)
    d[c][0] = d[c][1] = d[c][2] = d[c][3] = 0.f;
  int k = 0;
  for (; k + 4 <= windows; k += 4) {
    uint4 b[4], l[4], h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      b[i] = genc_lds4(w + (k + i) * 64);
      l[i] = genc_lds4(xl + (k + i) * 64);
      h[i] = HI ? genc_lds4(xh + (k + i) * 64) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      genc_mma_of<W>::tile(d[i % CH], l[i].x, h[i].x, l[i].y, h[i].y, b[i].x, b[i].y);
      genc_mma_of<W>::tile(d[i % CH], l[i].z, h[i].z, l[i].w, h[i].w, b[i].z, b[i].w);
    }
  }
  for (; k < windows; ++k) {
    const uint4 b = genc_lds4(w + k * 64), l = genc_lds4(xl + k * 64),
                h = HI ? genc_lds4(xh + k * 64) : make_uint4(0u, 0u, 0u, 0u);
    genc_mma_of<W>::tile(d[0], l.x, h.x, l.y, h.y, b.x, b.y);
    genc_mma_of<W>::tile(d[0], l.z, h.z, l.w, h.w, b.z, b.w);
  }
#pragma unroll
  for (int c = 1; c < CH; ++c)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      d[0][j] += d[c][j];
  // the warp's D [16][8] into its scratch, for the sums over segments
  const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  __syncwarp();
  dsc[g * 8 + 2 * q] = d[0][0];
  dsc[g * 8 + 2 * q + 1] = d[0][1];
  dsc[(g + 8) * 8 + 2 * q] = d[0][2];
  dsc[(g + 8) * 8 + 2 * q + 1] = d[0][3];
  __syncwarp();
}

// S (as lS) and the team size TW (as lTW) for an item of `count` outputs: a
// page goes to a team of TW warps (page p to team p % (WARPS / TW)), which
// deals its groups of columns to its warps. The cost of the busiest team in
// window units: its pages, each a fixed FIX (the wait for the page, the
// sums through shared memory, the release) and its busiest warp's windows.
// Many pages an item take a warp each (their fixed latencies overlap); an
// item of one page shares it. One copy for every routine (lS | lTW << 8).
// Every warp computes it at every product item, so the loops are unrolled
// and every divisor but rpp is a constant or a power of two: with a divide
// in each step it took 9.7% of the kernel's warp samples (Nsight Compute,
// the 4-layer 1.1B, 2026-12-05), as much as the mma windows.
static __device__ __noinline__ int genc_step_mma_shape(int T, int K32, int rpp, int count, int glu) {
  constexpr int WARPS = GENC_STEP_THREADS / 32, FIX = 16;
  const int lCOLS = glu ? 2 : 3, pages = (count + rpp - 1) / rpp;
  int lS = 0, lTW = 0, best = -1;
#pragma unroll
  for (int ls = 0; ls <= 3; ++ls) {
    if (ls > lCOLS || (K32 & ((1 << ls) - 1)) != 0) break; // S <= COLS (S columns a row), S divides K / 32
    const int lper = lCOLS - ls, nch = (T + (16 >> ls) - 1) >> (4 - ls);
    if (nch > 4) break;
    const int groups = (rpp + (1 << lper) - 1) >> lper, win = (K32 >> ls) * nch;
#pragma unroll
    for (int ltw = 0; (1 << ltw) <= WARPS && ltw <= 2; ++ltw) {
      if ((1 << ltw) > groups) break;
      const int teams = WARPS >> ltw; // a constant once unrolled: WARPS / TW
      const int teamPages = (pages + teams - 1) / teams;
      const int cost = teamPages * (FIX + ((groups + (1 << ltw) - 1) >> ltw) * win);
      if (best < 0 || cost < best) {
        best = cost;
        lS = ls;
        lTW = ltw;
      }
    }
  }
  return lS | lTW << 8;
}

// Output n of row t of the product routine `code` (its genc_step_epiCODE::
// store): genc defines it after the plan's routines, one switch over them.
static __device__ __noinline__ void genc_step_epi_store(int code, const GencStepMatvec &m, int t, int n, float g, float u);

// x [T][K] in shared memory at xs0 (T <= 16, K % 32 == 0, x and W of one
// type); a page: R outputs' rows [R][K], with a GLU the gate rows then the
// up rows. One copy for every product routine of the kernel (not inlined,
// the stores through genc_step_epi_store): the kernel's code is larger than
// an SM's instruction cache, and a routine's own copy was fetched again at
// every item. Returns the ring's pages consumed after the item's.
template <typename W, int PAGES, long long PAGE>
static __device__ __noinline__ int genc_step_matvec_mma(const GencStepRing r, bool trace, const GencStepMatvec &m, int first,
                                                        int count, unsigned xs0, int T, int code) {
  typedef typename W::S WS;
  constexpr int WARPS = GENC_STEP_THREADS / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
  const int K = (int)m.K, end = first + count, rpp = (int)m.rowsPerPage, GLU = m.glu;
  const int shape = genc_step_mma_shape(T, K >> 5, rpp, count, GLU);
  const int lS = shape & 255, lTW = shape >> 8, TW = 1 << lTW;
  const int S = 1 << lS, lper = (GLU ? 2 : 3) - lS, per = 1 << lper, TM = 16 >> lS, nch = (T + TM - 1) >> (4 - lS),
            windows = K >> (5 + lS);
  const int teams = WARPS >> lTW, team = warp >> lTW, tw = warp & (TW - 1), pages = (count + rpp - 1) / rpp;
  const int seg = g & (S - 1), colRow = GLU ? g >> (lS + 1) : g >> lS, up = GLU ? (g >> lS) & 1 : 0;
  const int at = seg * (K >> lS) + q * 8; // this lane's first k: its segment's, its 8 of a window
  const bool hi = T > (8 >> lS);         // A rows 8..15 hold step rows
  float *dsc = genc_step_d[warp];
  // Page ip of the item is team ip % teams's. GENC_STEP_TEAM_RELEASE: only
  // the page's team waits for it and releases it, so a warp steps from one
  // of its team's pages to the next; else every warp waits for every page
  // before its arrival on `empty`, its team's or not. A team of TW warps
  // where WARPS / TW teams leave warps over: those take no page.
  const int from = GENC_STEP_TEAM_RELEASE ? (team < teams ? team : pages) : 0, stride = GENC_STEP_TEAM_RELEASE ? teams : 1;
  for (int ip = from; ip < pages; ip += stride) {
    const int n0 = first + ip * rpp, p = r.consumed + ip, R = min(rpp, end - n0);
    const bool own = GENC_STEP_TEAM_RELEASE || (team < teams && ip % teams == team);
    const unsigned page = genc_smem_addr(GENC_STEP_TEAM_RELEASE ? genc_step_own_page<PAGES, PAGE>(r, trace, p)
                                                                : genc_step_page<PAGES, PAGE>(r, trace, p));
    const long long c0 = trace && lane == 0 ? clock64() : 0;
    // this warp's groups of the page's rows, where the page is its team's (page ip to team ip % teams)
    for (int r0 = own ? tw * per : R; r0 < R; r0 += TW * per) {
      // a column past the page's rows reads its last row; its sums are not stored
      const int row = min(r0 + colRow, R - 1);
      const unsigned w = page + (unsigned)(((up ? R + row : row) * K + at) * (int)sizeof(WS));
      for (int c = 0; c < nch; ++c) {
        // A rows past the step's rows read its last; their sums are not stored either
        const int tl = min(c * TM + (g >> lS), T - 1), th = min(c * TM + (g >> lS) + (8 >> lS), T - 1);
        const unsigned xl = xs0 + (unsigned)((tl * K + at) * (int)sizeof(WS)), xh = xs0 + (unsigned)((th * K + at) * (int)sizeof(WS));
        if (hi) genc_step_windows<W, true>(w, xl, xh, windows, dsc);
        else genc_step_windows<W, false>(w, xl, xh, windows, dsc);
        for (int i = lane; i < TM * per; i += 32) {
          const int tl = i >> lper, rr = i & (per - 1), t = c * TM + tl, n = r0 + rr;
          if (t < T && n < R) {
            float gs = 0.f, us = 0.f;
            for (int j = 0; j < S; ++j) {
              const float *dm = dsc + ((tl << lS) + j) * 8 + j;
              if (GLU) {
                gs += dm[(2 * rr) << lS];
                us += dm[(2 * rr + 1) << lS];
              } else {
                gs += dm[rr << lS];
              }
            }
            genc_step_epi_store(code, m, t, n0 + n, gs, us);
          }
        }
      }
    }
    if (trace && lane == 0) genc_step_count(&genc_step_computing, c0);
    genc_step_release<PAGES, PAGE>(r, p, GENC_STEP_TEAM_RELEASE && tw == 0 ? (unsigned)(WARPS - TW + 1) : 1u);
  }
  return r.consumed + pages;
}

// ---- a matrix-vector product over pages --------------------------------------
// x [T][K] (A's storage, T <= GENC_STEP_ROWS rows) in shared memory; a page
// holds R outputs' weight rows [R][K] (W's storage), with a GLU the gate rows
// then the up rows [2R][K]. Every warp takes every 4th output of a page.
// The tensor cores take it where they can (K a multiple of 32, x and W of
// one 16-bit type); else, on the CUDA cores, the warp takes the page's
// outputs one at a time, a row's 16-byte words lane by lane, a sum a row and
// x row, summed across the warp (the kernel-per-op GEMV's order); lane 0
// writes output n of each row through EPI.
// MMA: genc knows every op of the routine takes the tensor cores (K % 32 ==
// 0, x and W of one type; T <= GENC_STEP_ROWS <= 16), so the CUDA-core loop
// is not compiled into it.
template <typename A, typename W, int PAGES, long long PAGE, typename EPI, bool MMA>
static __device__ void genc_step_matvec(GencStepRing &r, const GencStepParams &sp, const GencStepMatvec &m,
                                        const GencStepItem &it, const typename A::S *xs, int T) {
  typedef typename W::S WS;
  typedef typename A::S AS;
  constexpr int V = 16 / (int)sizeof(WS);
  constexpr int WARPS = GENC_STEP_THREADS / 32, ROWS = GENC_STEP_ROWS, G = 1;
  static_assert(sizeof(AS) == sizeof(WS), "step matvec: x and the weight in words of one width");
  static_assert(ROWS <= 16, "step matvec: an mma's 16 A rows hold the step's rows");
  if (sp.trace && threadIdx.x == 0) genc_step_prologue = clock64() - genc_step_c1;
  if (MMA && genc_mma_of<W>::OK && genc_same<A, W>::V) {
    r.consumed = genc_step_matvec_mma<W, PAGES, PAGE>(r, sp.trace != 0, m, it.first, it.count, genc_smem_addr(xs), T, EPI::CODE);
    return;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int KW = (int)(m.K / V);
  const long long end = (long long)it.first + it.count, rpp = m.rowsPerPage;
  const uint4 *xv4 = (const uint4 *)xs;
  for (long long n0 = it.first; n0 < end; n0 += rpp) {
    const int p = r.consumed++;
    const int R = (int)min(rpp, end - n0);
    const uint4 *page = (const uint4 *)genc_step_page<PAGES, PAGE>(r, sp.trace != 0, p);
    const long long c0 = sp.trace && lane == 0 ? clock64() : 0;
    for (int o0 = warp * G; o0 < R; o0 += WARPS * G) { // this warp's outputs of the page
      float g[G][ROWS], u[G][ROWS];
#pragma unroll
      for (int j = 0; j < G; ++j)
#pragma unroll
        for (int t = 0; t < ROWS; ++t) g[j][t] = u[j][t] = 0.f;
      for (int k = lane; k < KW; k += 32) {
        uint4 gv[G], uv[G];
#pragma unroll
        for (int j = 0; j < G; ++j)
          if (o0 + j < R) {
            gv[j] = page[(long long)(o0 + j) * KW + k];
            if (EPI::GLU) uv[j] = page[(long long)(R + o0 + j) * KW + k];
          }
#pragma unroll
        for (int t = 0; t < ROWS; ++t) {
          if (t < T) {
            const uint4 xv = xv4[t * KW + k];
            const AS *xe = (const AS *)&xv;
#pragma unroll
            for (int j = 0; j < G; ++j) {
              if (o0 + j < R) {
                const WS *ge = (const WS *)&gv[j], *ue = (const WS *)&uv[j];
#pragma unroll
                for (int i = 0; i < V; ++i) g[j][t] += A::ld(xe[i]) * W::ld(ge[i]);
                if (EPI::GLU) {
#pragma unroll
                  for (int i = 0; i < V; ++i) u[j][t] += A::ld(xe[i]) * W::ld(ue[i]);
                }
              }
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < G; ++j) {
        if (o0 + j < R) {
#pragma unroll
          for (int t = 0; t < ROWS; ++t) {
            if (t < T) {
#pragma unroll
              for (int s = 16; s > 0; s >>= 1) {
                g[j][t] += __shfl_xor_sync(0xffffffffu, g[j][t], s);
                if (EPI::GLU) u[j][t] += __shfl_xor_sync(0xffffffffu, u[j][t], s);
              }
              if (lane == 0) EPI::store(m, t, n0 + o0 + j, g[j][t], u[j][t]);
            }
          }
        }
      }
    }
    if (sp.trace && lane == 0) genc_step_count(&genc_step_computing, c0);
    genc_step_release<PAGES, PAGE>(r, p);
  }
}

// The input rows [T][K] of a product without a prologue: from where the op
// before wrote them, through L2.
template <typename A>
static __device__ __forceinline__ void genc_step_row_in(typename A::S *xs, const GencStepMatvec &m, int T) {
  constexpr int V = 16 / (int)sizeof(typename A::S);
  for (long long k = threadIdx.x; k < T * (m.K / V); k += GENC_STEP_THREADS)
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
    }
  }
  return true;
}
)";
}

} // namespace genc
