#!/usr/bin/env python3
"""Runs the 16-bit tensor-core GEMV entries genc emits (codegen/GemvMma.cpp:
genc_gemv_mma, the `_mma16` entries, and genc_gemv_mma_wide, `_mmaw16/32/64`)
on the CPU, where there is no GPU: the GEMV templates of a `genc compile
--emit=cuda` file compiled as host C++ with a block's threads as std::threads
and the warp's mma emulated from its fragments as PTX lays them out (the
host prelude of tests/tools/emulate_nbits_kernels.py), against a
double-precision product:

  emulate_gemv_mma_kernels.py CXX WORK_DIR FILE.cu...

Every family the files name (a, w of one 16-bit type) runs on random a, w
and bias: K 64, 96, 160 and 1,056 (a chunk of a cut short, the weights'
ring refilled), N 72 (a part group of each entry's columns), the entries at
the rows the executor gives them (_mma16 at 2, 3, 9, 16; _mmaw16 at 2, 3, 16;
_mmaw32 at 17, 32; _mmaw64 at 33, 50, 64), K split over 1 to 4 blocks (one
split for every entry of a K and form, the next for the next), y poisoned with 0xff; and each entry again as a GLU's pair
(gate row n and up row N/2 + n into one output, through a stand-in policy
that keeps the two sums). Each element within u_y |ref| + 1.2 (K 2^-24
sum|a w| + 2^-24) (gpucheck's bound, tests/gpu/GemvMmaCheck.cpp); every
ticket back at zero; and _mmaw16's 3 rows the same bits as the first 3 of
_mmaw64's 50, _mma16's 3 as the first 3 of its 16 (a row's sums do not
depend on the launch's other rows).
Prints a line a family and the total; exit 1 when any case is off. What it
cannot show: the GPU's own scheduling, memory ordering and launch limits
(gpucheck on the GPU).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from emulate_nbits_kernels import HOST_PRELUDE, last_block  # noqa: E402

EXTRA_PRELUDE = r'''
#include <algorithm>
struct alignas(8) float2 { float x, y; };
static float2 make_float2(float x, float y) { return float2{x, y}; }
static void __stcg(float2 *p, float2 v) { *p = v; }
static float2 __ldcg(const float2 *p) { return *p; }
// The async copies as plain ones (a block's threads meet at its barriers
// before any reads what another copied), zeros where not valid.
static void genc_gemv_cp16(void *dst, const void *src, bool valid) {
  if (valid) std::memcpy(dst, src, 16); else std::memset(dst, 0, 16);
}
static void genc_gemv_cp_commit() {}
template <int N> static void genc_gemv_cp_wait() {}
'''

DRIVER = r'''
static void emulate(void (*k)(const GencGemvParams &), const GencGemvParams &p, unsigned gx) {
  for (unsigned bx = 0; bx < gx; ++bx) {
    std::vector<Warp> warps(8);
    std::barrier<> block(256);
    gWarps = warps.data();
    gBlock = &block;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 256; ++t)
      ts.emplace_back([&, t] { threadIdx.x = t; blockIdx.x = bx; k(p); });
    for (auto &t : ts) t.join();
  }
}
template <typename T> struct Rounding { static constexpr double u = 0; };
template <> struct Rounding<genc_f16> { static constexpr double u = 1.0 / 2048; };
template <> struct Rounding<genc_bf16> { static constexpr double u = 1.0 / 256; };
// A GLU's pair (gate n, up NO + n) kept unrounded in y2 [M][2][NO], floats.
struct HostPair {
  static constexpr int ROWS = 2;
  template <typename Y, typename B, int BIAS, int ACT>
  static void store(const GencGemvParams &p, long long n, long long NO, int m, const float (&acc)[2]) {
    for (int r = 0; r < 2; ++r) {
      const float b = BIAS ? B::ld(((const typename B::S *)p.bias)[r * NO + n]) : 0.f;
      ((float *)p.y)[(m * 2 + r) * NO + n] = genc_gemv_act<ACT>(acc[r] + b);
    }
  }
};
static double act(int a, double x) {
  if (a == 1) return x > 0 ? x : 0;
  if (a == 2) return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return x;
}
static int gCases = 0, gOff = 0;

template <typename A, typename W, typename Y, typename B, int BIAS, int ACT, int U>
static void run(const char *name) {
  typedef void (*Entry)(const GencGemvParams &);
  struct Form { const char *label; int rows, cols; Entry store, pair; };
  const Form forms[] = {
    {"_mma16", 16, 32, genc_gemv_mma<A, W, Y, B, BIAS, ACT, 1, 4, GencGemvStore>, genc_gemv_mma<A, W, Y, B, BIAS, ACT, 1, 4, HostPair>},
    {"_mmaw16", 16, 64, genc_gemv_mma_wide<A, W, Y, B, BIAS, ACT, 1, GencGemvStore, U>, genc_gemv_mma_wide<A, W, Y, B, BIAS, ACT, 1, HostPair, U>},
    {"_mmaw32", 32, 64, genc_gemv_mma_wide<A, W, Y, B, BIAS, ACT, 2, GencGemvStore, U>, genc_gemv_mma_wide<A, W, Y, B, BIAS, ACT, 2, HostPair, U>},
    {"_mmaw64", 64, 64, genc_gemv_mma_wide<A, W, Y, B, BIAS, ACT, 4, GencGemvStore, U>, genc_gemv_mma_wide<A, W, Y, B, BIAS, ACT, 4, HostPair, U>},
  };
  struct Run { int form; int M; };
  const Run runs[] = {{0, 2}, {0, 3}, {0, 9}, {0, 16}, {1, 2}, {1, 3}, {1, 16}, {2, 17}, {2, 32}, {3, 33}, {3, 50}, {3, 64}};
  std::mt19937 rng(47);
  std::normal_distribution<float> g(0.f, 1.f);
  int cases = 0, off = 0;
  double worst = 0;
  const long long Ks[] = {64, 96, 160, 1056};
  for (int ki = 0; ki < 4; ++ki) {
    const long long K = Ks[ki], N = 72;
    std::vector<typename W::S> w(N * K);
    std::vector<typename B::S> bias(N);
    for (auto &x : w) x = W::st(g(rng));
    for (auto &x : bias) x = B::st(g(rng));
    std::vector<typename A::S> a50(50 * K);
    for (auto &x : a50) x = A::st(g(rng));
    for (int pair = 0; pair < 2; ++pair) {
      std::vector<unsigned char> rows3, rows50; // y's first 3 rows: _mmaw16 at M 3, _mmaw64 at M 50
      std::vector<unsigned char> narrow3, narrow16; // _mma16 at M 3 and 16
      for (const Run &r : runs) {
        const Form &f = forms[r.form];
        const int M = r.M;
        std::vector<typename A::S> a(M * K);
        const bool fromA50 = M == 3 || M == 50 || (r.form == 0 && M == 16);
        if (fromA50) std::copy(a50.begin(), a50.begin() + M * K, a.begin());
        else for (auto &x : a) x = A::st(g(rng));
        const long long NO = pair ? N / 2 : N;
        std::vector<typename Y::S> y(M * N);
        std::vector<float> y2(M * N);
        std::memset(y.data(), 0xff, y.size() * sizeof(y[0]));
        std::memset(y2.data(), 0xff, y2.size() * sizeof(y2[0]));
        const long long groups = (N + f.cols - 1) / f.cols;
        std::vector<float> parts(groups * 4 * 64 * f.cols, NAN);
        std::vector<unsigned> tickets(groups, 0u);
        const long long split = 1 + (ki + pair) % 4; // as the executor's: the shape's, whatever M
        GencGemvParams p{(unsigned long long)a.data(), (unsigned long long)w.data(),
                         BIAS ? (unsigned long long)bias.data() : 0ull,
                         pair ? (unsigned long long)y2.data() : (unsigned long long)y.data(), M, K, N,
                         (unsigned long long)parts.data(), (unsigned long long)tickets.data(), split};
        emulate(pair ? f.pair : f.store, p, (unsigned)(groups * split));
        ++cases;
        bool bad = false;
        for (unsigned t : tickets) bad |= t != 0;
        if (bad) std::printf("  %s%s K=%lld M=%d split %lld: a ticket left set\n", name, f.label, K, M, split);
        double ratio = 0;
        for (int m = 0; m < M; ++m)
          for (long long o = 0; o < NO; ++o)
            for (int h = 0; h < (pair ? 2 : 1); ++h) {
              const long long n = o + h * NO; // the weight row
              double sum = 0, sumAbs = 0;
              for (long long k = 0; k < K; ++k) {
                const double t = (double)A::ld(a[m * K + k]) * W::ld(w[n * K + k]);
                sum += t;
                sumAbs += std::fabs(t);
              }
              const double ref = act(ACT, sum + (BIAS ? B::ld(bias[n]) : 0.0));
              const double got = pair ? y2[(m * 2 + h) * NO + o] : Y::ld(y[m * N + n]);
              const double u = std::ldexp(1.0, -24);
              const double bound = (pair ? 0.0 : Rounding<Y>::u) * std::fabs(ref) + 1.2 * (K * u * sumAbs + u);
              ratio = std::max(ratio, std::isnan(got) ? INFINITY : std::fabs(got - ref) / bound);
            }
        worst = std::max(worst, ratio);
        if (!(ratio <= 1) || bad) {
          ++off;
          if (ratio > 1) std::printf("  %s%s%s K=%lld M=%d split %lld: off, |y - ref| / bound = %g\n", name, f.label,
                                     pair ? " pair" : "", K, M, split, ratio);
        }
        if (!pair && r.form == 1 && M == 3) rows3.assign((unsigned char *)y.data(), (unsigned char *)(y.data() + 3 * N));
        if (!pair && r.form == 3 && M == 50) rows50.assign((unsigned char *)y.data(), (unsigned char *)(y.data() + 3 * N));
        if (!pair && r.form == 0 && M == 3) narrow3.assign((unsigned char *)y.data(), (unsigned char *)(y.data() + 3 * N));
        if (!pair && r.form == 0 && M == 16) narrow16.assign((unsigned char *)y.data(), (unsigned char *)(y.data() + 3 * N));
      }
      if (!pair) {
        ++cases;
        if (rows3.empty() || rows3 != rows50) {
          ++off;
          std::printf("  %s K=%lld: _mmaw16's 3 rows are not the first 3 of _mmaw64's 50\n", name, K);
        }
        ++cases;
        if (narrow3.empty() || narrow3 != narrow16) {
          ++off;
          std::printf("  %s K=%lld: _mma16's 3 rows are not the first 3 of its 16\n", name, K);
        }
      }
    }
  }
  std::printf("%s: %d cases, %d off, max |y - ref| / bound %.3g\n", name, cases, off, worst);
  gCases += cases;
  gOff += off;
}
'''


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    cxx, work, files = args[0], args[1], args[2:]
    section, families = None, []
    for path in files:
        text = open(path).read()
        start = text.find("struct GencGemvParams")
        end = text.find("// ==== GEMV ", start)
        if start < 0 or end < 0:
            sys.exit(f"emulate_gemv_mma_kernels: {path} holds no GEMV kernels")
        # `static alignas(16)` is no declaration in host C++: the attribute first.
        section = section or last_block(text, path) + text[start:end].replace("__shared__ alignas(16)",
                                                                                "alignas(16) __shared__")
        # The entries' weight rounds in flight (GENC_GEMV_MMA_WIDE_ROUNDS) ride on the label.
        for name, targs, rounds in re.findall(r'void __launch_bounds__\(\d+\) (gemv_\d+)_mmaw16\(const GencGemvParams p\) '
                                              r'\{ genc_gemv_mma_wide<([^>]*), 1, GencGemvStore, (\d+)>\(p\); \}', text):
            families.append((f"{os.path.basename(path)} {name} <{targs}> U={rounds}", f"{targs}, {rounds}"))
    if not families:
        sys.exit("emulate_gemv_mma_kernels: no tensor-core GEMV entries in " + " ".join(files))
    os.makedirs(work, exist_ok=True)
    calls = "".join(f'  run<{targs}>("{label}");\n' for label, targs in families)
    src = os.path.join(work, "emulate.cpp")
    with open(src, "w") as f:
        f.write(HOST_PRELUDE + EXTRA_PRELUDE + section + DRIVER + "int main() {\n" + calls +
                '  std::printf("%d cases, %d off\\n", gCases, gOff);\n  return gOff != 0;\n}\n')
    exe = os.path.join(work, "emulate")
    r = subprocess.run([cxx, "-std=c++20", "-O1", "-pthread", "-w", "-o", exe, src], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"emulate_gemv_mma_kernels: {cxx} failed on {src}:\n{r.stderr[-3000:]}")
    sys.exit(subprocess.run([exe]).returncode)


if __name__ == "__main__":
    main()
