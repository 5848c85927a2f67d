#!/usr/bin/env python3
"""Runs the 4/8-bit weight kernels genc emits (codegen/NBitsKernels.cpp) on the
CPU, where there is no GPU: the templates of a `genc compile --emit=cuda` file,
compiled as host C++ with a block's threads as std::threads (warp shuffles and
__syncthreads on std::barrier, shared memory one copy a block, blocks one
after another), against a double-precision sum of the layout's dequantized
weights (runtime/plan/NBitsLayout.h, written out again here):

  emulate_nbits_kernels.py CXX WORK_DIR FILE.cu... [--family "A, S, Y, BITS, BS, ZP"]...

Every family the files name (and each --family: forms the fixtures' plans do
not make, such as float zero points) runs on random codes, scales, zero
points and rows of a: K 64, 100, 160 and 300 (blocks cut short, rows of a at
and off 16-byte multiples; 1,100 too on the tensor-core entries), N 13 (a part block of warps), the GEMV entries at
M 1, 2, 3, 5 and 8 (13 and 32: the 8-row entry in chunks; at 1 also with a
prologue's row staged in shared memory and as a GLU's pair of columns n and
N/2 + n, through stand-in policies), the tiles at 3,
8 and 70 and, in the families that have them, the tensor-core entries at 9,
13, 17, 32, 50 and 64 (and 5, 8: rows the GEMV leaves to them) and their tiles at 3, 8 and 70 (the mma emulated from the warp's fragments as PTX
lays them out; K split over 1 to 4 blocks, case by case in turn), y poisoned with 0xff. Each
element within u_y |ref| + 3 K 2^-24 sum|a w| + 2^-24 (gpucheck's bound,
tests/gpu/NBitsCheck.cpp). Prints a line a family and the total; exit 1 when
any case is off. What it cannot show: the GPU's own scheduling, memory
ordering and launch limits (tests/codegen/gpucheck-nbits.test on the GPU).
"""
import os
import re
import subprocess
import sys

HOST_PRELUDE = r'''
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
#define __shared__ static
static float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
struct Dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local Dim3 threadIdx, blockIdx;
Dim3 blockDim{256, 1, 1};
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) float4 { float x, y, z, w; };
static float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
// The K split's parts and tickets (blocks run one after another here).
static void __stcg(float4 *p, float4 v) { *p = v; }
static float4 __ldcg(const float4 *p) { return *p; }
static void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
// f16 and bf16 by their bit patterns, rounding to nearest even.
static float genc_h2f(unsigned short h) {
  const unsigned e = (h >> 10) & 31, m = h & 1023;
  float f = e == 0 ? std::ldexp((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp((float)(m | 1024), (int)e - 25);
  return (h & 0x8000) ? -f : f;
}
static unsigned short genc_f2h(float x) {
  const unsigned short s = std::signbit(x) ? 0x8000 : 0;
  const float a = std::fabs(x);
  if (std::isnan(x)) return s | 0x7e00;
  if (a >= 65520.f) return s | 0x7c00;
  if (a < std::ldexp(1.f, -14)) return s | (unsigned short)std::nearbyint(a * 16777216.f);
  int e;
  const float fr = std::frexp(a, &e);
  float mq = std::nearbyint(std::ldexp(fr, 11));
  if (mq == 2048.f) mq = 1024.f, ++e;
  return s | (unsigned short)((unsigned)(e + 14) << 10) | (unsigned short)((unsigned)mq - 1024);
}
static float genc_bf2f(unsigned short h) { unsigned u = ((unsigned)h) << 16; float f; std::memcpy(&f, &u, 4); return f; }
static unsigned short genc_f2bf(float f) {
  unsigned u; std::memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return (unsigned short)(u >> 16);
}
struct genc_f32 { typedef float S; static float ld(S v) { return v; } static S st(float f) { return f; } };
struct genc_f16 { typedef unsigned short S; static float ld(S v) { return genc_h2f(v); } static S st(float f) { return genc_f2h(f); } };
struct genc_bf16 { typedef unsigned short S; static float ld(S v) { return genc_bf2f(v); } static S st(float f) { return genc_f2bf(f); } };
template <int B> struct genc_word;
template <> struct genc_word<8> { typedef uint2 T; };
template <> struct genc_word<16> { typedef uint4 T; };
template <typename T, int V>
static void genc_vload(T (&dst)[V], const T *src) {
  constexpr int B = (int)sizeof(T) * V, W = B < 16 ? B : 16;
  typedef typename genc_word<W>::T Word;
  if (reinterpret_cast<uintptr_t>(src) % W) { std::fprintf(stderr, "a vector load off its alignment\n"); std::abort(); }
  for (int k = 0; k < B / W; ++k) reinterpret_cast<Word *>(dst)[k] = reinterpret_cast<const Word *>(src)[k];
}
static void genc_pdl_wait() {}
static void genc_pdl_launch() {}
struct Warp { std::barrier<> bar{32}; float slot[32]; unsigned fa[32][4], fb[32][2]; };
static Warp *gWarps;
static std::barrier<> *gBlock;
static float __shfl_xor_sync(unsigned, float v, int o) {
  Warp &w = gWarps[threadIdx.x >> 5];
  const int lane = threadIdx.x & 31;
  w.slot[lane] = v;
  w.bar.arrive_and_wait();
  const float r = w.slot[lane ^ o];
  w.bar.arrive_and_wait();
  return r;
}
static void __syncthreads() { gBlock->arrive_and_wait(); }
static uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
// The tensor-core primitives (codegen/NBitsMma.cpp's device ones and the
// prelude's genc_mma): prmt's default mode, an f16x2 subtraction, a float's
// bits, and the warp's m16n8k16 mma from every lane's fragments (PTX's
// layout; sums in double, then added to d in f32).
static unsigned genc_prmt(unsigned x, unsigned y, unsigned s) {
  const unsigned long long b = (unsigned long long)y << 32 | x;
  unsigned d = 0;
  for (int i = 0; i < 4; ++i) d |= (unsigned)((b >> (8 * ((s >> (4 * i)) & 7))) & 255) << (8 * i);
  return d;
}
static unsigned genc_hsub2(unsigned x, unsigned y) {
  const unsigned lo = genc_f2h(genc_h2f(x & 0xffff) - genc_h2f(y & 0xffff));
  const unsigned hi = genc_f2h(genc_h2f(x >> 16) - genc_h2f(y >> 16));
  return lo | hi << 16;
}
static unsigned genc_fbits(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
template <typename A> struct genc_mma {
  static void run(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    Warp &w = gWarps[threadIdx.x >> 5];
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const unsigned a[4] = {a0, a1, a2, a3};
    for (int i = 0; i < 4; ++i) w.fa[lane][i] = a[i];
    w.fb[lane][0] = b0;
    w.fb[lane][1] = b1;
    w.bar.arrive_and_wait();
    auto half = [](unsigned v, int hi) { return (float)A::ld((unsigned short)(hi ? v >> 16 : v & 0xffff)); };
    auto av = [&](int row, int k) { return half(w.fa[(row & 7) * 4 + (k & 7) / 2][(row >> 3) + 2 * (k >> 3)], k & 1); };
    auto bv = [&](int k, int col) { return half(w.fb[col * 4 + (k & 7) / 2][k >> 3], k & 1); };
    float out[4];
    for (int i = 0; i < 4; ++i) {
      double sum = 0;
      for (int k = 0; k < 16; ++k) sum += (double)av(g + 8 * (i >> 1), k) * bv(k, 2 * q + (i & 1));
      out[i] = d[i] + (float)sum;
    }
    w.bar.arrive_and_wait();
    for (int i = 0; i < 4; ++i) d[i] = out[i];
  }
};
'''

DRIVER = r'''
template <typename P> static void emulate(void (*k)(const P &), const P &p, unsigned gx, unsigned gy) {
  for (unsigned by = 0; by < gy; ++by)
    for (unsigned bx = 0; bx < gx; ++bx) {
      std::vector<Warp> warps(8);
      std::barrier<> block(256);
      gWarps = warps.data();
      gBlock = &block;
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < 256; ++t)
        ts.emplace_back([&, t] { threadIdx.x = t; blockIdx.x = bx; blockIdx.y = by; k(p); });
      for (auto &t : ts) t.join();
    }
}
template <typename T> struct Rounding { static constexpr double u = 0; };
template <> struct Rounding<genc_f16> { static constexpr double u = 1.0 / 2048; };
template <> struct Rounding<genc_bf16> { static constexpr double u = 1.0 / 256; };
template <typename A, typename S, typename Y, int BITS, int BS, int ZP, int MT>
static void gemvEntry(const GencNBitsParams &p) { genc_gemvq<A, S, Y, BITS, BS, ZP, MT>(p); }
template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static void tilesEntry(const GencNBitsParams &p) { genc_gemvq_tiles<A, S, Y, BITS, BS, ZP>(p); }
// The fused one-row entries' two policies, standing in for the generated
// ones (a fused body's row, a GLU's math): a prologue that stages a's row in
// shared memory as a body's row function would (thread by thread, then the
// block's barrier), and an epilogue that keeps a warp's two columns' sums
// (n and NO + n) unrounded in y2 [1][2][NO], floats.
struct HostStaged {
  template <typename AS>
  static const AS *run(const GencGemvPrologue *q, const AS *, AS *staged) {
    const AS *a = (const AS *)q->ptr[0];
    for (long long k = threadIdx.x; k < q->sym[0]; k += blockDim.x) staged[k] = a[k];
    __syncthreads();
    return staged;
  }
};
struct HostPair {
  static constexpr int ROWS = 2;
  template <typename Y>
  static void store(const GencNBitsParams &p, long long m, long long n, long long NO, const float (&acc)[2]) {
    ((float *)p.y)[(m * 2 + 0) * NO + n] = acc[0];
    ((float *)p.y)[(m * 2 + 1) * NO + n] = acc[1];
  }
};
static GencGemvPrologue gPrologue;
template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static void stagedEntry(const GencNBitsParams &p) { genc_gemvq<A, S, Y, BITS, BS, ZP, 1, HostStaged, 304>(p, &gPrologue); }
template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static void pairEntry(const GencNBitsParams &p) {
  genc_gemvq<A, S, Y, BITS, BS, ZP, 1, GencNBitsDirect, 1, HostPair>(p);
}
template <typename A, typename S, typename Y, int BITS, int BS, int ZP, int MR>
static void mmaEntry(const GencNBitsParams &p) {
  if constexpr (genc_nbits_mma_ok<A, BITS, BS, ZP>::V) genc_gemvq_mma<A, S, Y, BITS, BS, ZP, MR>(p);
}
template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static void mmaTilesEntry(const GencNBitsParams &p) {
  if constexpr (genc_nbits_mma_ok<A, BITS, BS, ZP>::V) genc_gemvq_mma_tiles<A, S, Y, BITS, BS, ZP>(p);
}
static int gCases = 0, gOff = 0;

template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static void run(const char *name) {
  std::mt19937 rng(48);
  std::normal_distribution<float> g(0.f, 1.f);
  int cases = 0, off = 0;
  double worst = 0;
  for (long long K : {64LL, 100LL, 160LL, 300LL, 1100LL}) { // 1100: the tensor cores' ring refilled, 9 chunks of a
    const long long N = 13, blocks = (K + BS - 1) / BS, blob = BS * BITS / 8, zpb = (blocks * BITS + 7) / 8;
    std::vector<unsigned char> codes(N * blocks * blob), zp(N * zpb);
    std::vector<typename S::S> sc(N * blocks), zf(N * blocks);
    for (auto &c : codes) c = rng() & 255;
    for (auto &z : zp) z = rng() & 255;
    for (auto &s : sc) s = S::st(g(rng) * 0.1f);
    for (auto &z : zf) z = S::st(g(rng) * 4.f + (1 << (BITS - 1)));
    // The layout, written out again (runtime/plan/NBitsLayout.h).
    auto W = [&](long long k, long long n) {
      const long long j = k / BS;
      const int e = (int)(k % BS);
      const unsigned char *b = codes.data() + (n * blocks + j) * blob;
      const int q = BITS == 8 ? b[e] : (b[e / 2] >> ((e & 1) * 4)) & 15;
      const double z = ZP == 0 ? (1 << (BITS - 1))
                     : ZP == 1 ? (BITS == 8 ? zp[n * zpb + j] : (zp[n * zpb + j / 2] >> ((j & 1) * 4)) & 15)
                               : S::ld(zf[n * blocks + j]);
      return ((double)q - z) * (double)S::ld(sc[n * blocks + j]);
    };
    for (int M : {1, 2, 3, 5, 8, 9, 13, 17, 32, 50, 64, 70})
      for (int mode = 0; mode < 6; ++mode) { // the GEMV entries, the tiles, the tensor cores, their tiles,
                                             // one row staged by a prologue, one row into a GLU's pair
        const bool tiles = mode == 1;
        if (K == 1100 && mode != 2) continue;
        if (mode == 0 && (M > 32 || M == 9 || M == 17)) continue;
        if (mode >= 4 && M != 1) continue;
        if ((tiles || mode == 3) && M != 3 && M != 8 && M != 70) continue;
        if (mode == 2 && (!genc_nbits_mma_ok<A, BITS, BS, ZP>::V || M < 5 || M > 64)) continue;
        if (mode == 3 && !genc_nbits_mma_ok<A, BITS, BS, ZP>::V) continue;
        std::vector<typename A::S> a(M * K);
        for (auto &x : a) x = A::st(g(rng));
        std::vector<typename Y::S> y(M * N);
        std::memset(y.data(), 0xff, y.size() * sizeof(y[0]));
        GencNBitsParams p{(unsigned long long)a.data(), (unsigned long long)codes.data(), (unsigned long long)sc.data(),
                          ZP == 1 ? (unsigned long long)zp.data() : ZP == 2 ? (unsigned long long)zf.data() : 0ull,
                          (unsigned long long)y.data(), M, K, N};
        std::vector<float> y2(2 * (N / 2), NAN), parts(4 * 64 * 64, NAN);
        unsigned ticket = 0;
        if (mode == 4) {
          gPrologue.sym[0] = K;
          gPrologue.ptr[0] = p.a;
          p.a = 0; // the entry reads a only through the prologue
          emulate(stagedEntry<A, S, Y, BITS, BS, ZP>, p, (unsigned)((N + 7) / 8), 1);
        } else if (mode == 5) {
          p.N = N / 2 * 2; // the pair's columns: n and N / 2 + n
          p.y = (unsigned long long)y2.data();
          emulate(pairEntry<A, S, Y, BITS, BS, ZP>, p, (unsigned)((N / 2 + 7) / 8), 1);
        } else if (tiles) {
          emulate(tilesEntry<A, S, Y, BITS, BS, ZP>, p, (unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
        } else if (mode == 3) {
          emulate(mmaTilesEntry<A, S, Y, BITS, BS, ZP>, p, (unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64));
        } else if (mode == 2) {
          const int mr = M <= 16 ? 1 : M <= 32 ? 2 : 4;
          auto f = mr == 1 ? mmaEntry<A, S, Y, BITS, BS, ZP, 1> : mr == 2 ? mmaEntry<A, S, Y, BITS, BS, ZP, 2>
                                                                    : mmaEntry<A, S, Y, BITS, BS, ZP, 4>;
          // K split over 1 to 4 blocks, case by case in turn (N 13: one group of 64 columns)
          p.split = 1 + cases % 4;
          p.parts = (unsigned long long)parts.data();
          p.tickets = (unsigned long long)&ticket;
          emulate(f, p, (unsigned)(((N + 63) / 64) * p.split), 1);
          if (ticket != 0) {
            std::printf("  %s mma K=%lld M=%d split %lld: the ticket left at %u\n", name, K, M, p.split, ticket);
            ++off;
          }
        } else {
          auto f = M <= 1 ? gemvEntry<A, S, Y, BITS, BS, ZP, 1> : M <= 2 ? gemvEntry<A, S, Y, BITS, BS, ZP, 2>
                 : M <= 4 ? gemvEntry<A, S, Y, BITS, BS, ZP, 4> : gemvEntry<A, S, Y, BITS, BS, ZP, 8>;
          emulate(f, p, (unsigned)((N + 7) / 8), (unsigned)((M + 7) / 8));
        }
        double ratio = 0;
        for (int m = 0; m < M; ++m)
          for (long long n = 0; n < N; ++n) {
            double r = 0, sum = 0;
            for (long long k = 0; k < K; ++k) {
              const double t = (double)A::ld(a[m * K + k]) * W(k, n);
              r += t;
              sum += std::fabs(t);
            }
            if (mode == 5 && n >= N / 2 * 2) continue;
            const double got = mode == 5 ? y2[n] : Y::ld(y[m * N + n]); // y2 [2][N / 2] is [N - 1] flat
            const double u = mode == 5 ? 0.0 : Rounding<Y>::u;
            const double bound = u * std::fabs(r) + 3.0 * K * std::ldexp(1.0, -24) * sum + std::ldexp(1.0, -24);
            ratio = std::max(ratio, std::isnan(got) ? INFINITY : std::fabs(got - r) / bound);
          }
        ++cases;
        worst = std::max(worst, ratio);
        if (!(ratio <= 1)) {
          ++off;
          std::printf("  %s %s K=%lld M=%d: off, |y - ref| / bound = %g\n", name,
                      mode == 1 ? "tiles" : mode == 2 ? "mma" : mode == 3 ? "mma tiles" : mode == 4 ? "staged"
                      : mode == 5 ? "pair" : "gemv", K, M, ratio);
        }
      }
  }
  std::printf("%s: %d cases, %d off, max |y - ref| / bound %.3g\n", name, cases, off, worst);
  gCases += cases;
  gOff += off;
}
'''


def last_block(text, path):
    """The prelude's genc_last_block (codegen/CudaSyntax.cpp) as the file
    has it: HOST_PRELUDE's macros and primitives make it host C++."""
    m = re.search(r"static __device__ __forceinline__ bool genc_last_block\(.*?\n\}\n", text, re.S)
    if not m:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {path} holds no genc_last_block")
    return m.group(0)


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    cxx, work, rest = args[0], args[1], args[2:]
    files, extra = [], []
    while rest:
        a = rest.pop(0)
        if a == "--family":
            extra.append(rest.pop(0))
        else:
            files.append(a)
    section, families = None, []
    for path in files:
        text = open(path).read()
        start = text.find("struct GencNBitsParams")
        end = text.find("// ==== 4/8-bit GEMV", start)
        if start < 0 or end < 0:
            sys.exit(f"emulate_nbits_kernels: {path} holds no 4/8-bit kernels")
        pro = re.search(r"struct GencGemvPrologue \{.*?\};", text, re.S)
        if not pro:
            sys.exit(f"emulate_nbits_kernels: {path} holds no GencGemvPrologue")
        section = section or last_block(text, path) + pro.group(0) + "\n" + text[start:end]
        for name, targs in re.findall(r'void __launch_bounds__\(\d+\) (gemvq_\d+)_tiles\(const GencNBitsParams p\) '
                                      r'\{ genc_gemvq_tiles<([^>]*)>\(p\); \}', text):
            families.append((f"{os.path.basename(path)} {name} <{targs}>", targs))
    families += [(f"--family <{f}>", f) for f in extra]
    os.makedirs(work, exist_ok=True)
    calls = "".join(f'  run<{targs}>("{label}");\n' for label, targs in families)
    src = os.path.join(work, "emulate.cpp")
    with open(src, "w") as f:
        f.write(HOST_PRELUDE + section + DRIVER + "int main() {\n" + calls +
                '  std::printf("%d cases, %d off\\n", gCases, gOff);\n  return gOff != 0;\n}\n')
    exe = os.path.join(work, "emulate")
    r = subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", "-o", exe, src], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"emulate_nbits_kernels: {cxx} failed on {src}:\n{r.stderr[-3000:]}")
    sys.exit(subprocess.run([exe]).returncode)


if __name__ == "__main__":
    main()
