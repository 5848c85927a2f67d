// The kernels of matmul_nbits (NBitsKernels.h): the templates and one family per storage form.
#include "codegen/NBitsKernels.h"

#include "codegen/CudaSyntax.h"
#include "codegen/GemvKernels.h"
#include "codegen/NBitsMma.h"
#include "passes/analysis/Storage.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/NBitsAbi.h"

#include <map>
#include <set>
#include <sstream>

namespace genc {
namespace {

const char *kTemplates = R"(
// ---- genc 4/8-bit weight templates -------------------------------------------
//   y[M, N] = a[M, K] . W,  W[k, n] = (q[n, k] - z[n, k / BS]) * s[n, k / BS]
//   codes u8 [N, blocks, BLOB] (4 bits: element 2i in the low nibble of byte
//   i, 2i + 1 in the high one), scales S [N, blocks], zero points: ZP 0 none
//   (2^(BITS - 1)), 1 u8 [N, ceil(blocks * BITS / 8)] packed like the codes,
//   2 S [N, blocks]. A, S, Y: storage types (genc_f32 / genc_f16 / genc_bf16).

// The zero point of block j of column n, as a float.
template <typename S, int BITS, int ZP>
static __device__ __forceinline__ float genc_nbits_zero(const GencNBitsParams &p, long long n, long long j,
                                                        long long blocks) {
  if (ZP == 1) {
    const unsigned char *z = (const unsigned char *)p.zp + n * ((blocks * BITS + 7) / 8);
    return (float)(BITS == 8 ? z[j] : (z[j >> 1] >> ((j & 1) * 4)) & 15);
  }
  if (ZP == 2) return S::ld(((const typename S::S *)p.zp)[n * blocks + j]);
  return (float)(1 << (BITS - 1));
}

// W[k, n], dequantized.
template <typename S, int BITS, int BS, int ZP>
static __device__ __forceinline__ float genc_nbits_weight(const GencNBitsParams &p, long long n, long long k,
                                                          long long blocks) {
  constexpr int BLOB = BS * BITS / 8;
  const long long j = k / BS;
  const int e = (int)(k % BS);
  const unsigned char *blob = (const unsigned char *)p.codes + (n * blocks + j) * BLOB;
  const int q = BITS == 8 ? blob[e] : (blob[e >> 1] >> ((e & 1) * 4)) & 15;
  const float s = S::ld(((const typename S::S *)p.scales)[n * blocks + j]);
  return ((float)q - genc_nbits_zero<S, BITS, ZP>(p, n, j, blocks)) * s;
}

// One word of column n's codes: block j's elements e0 .. e0 + V - 1 (k0 =
// j * BS + e0 on), widened and dotted with the M rows at a into acc.
// vec: a's rows start at multiples of 16 bytes (whole words of a load).
// A code becomes a float without a conversion instruction (those run at an
// eighth of the FMA rate): the bits 0x4B000000 | q are the float 2^23 + q,
// and subtracting 2^23 + z (z an integer below 256) leaves q - z exactly. The
// word's products sum before its block's scale multiplies them, once.
template <typename A, typename S, int BITS, int BS, int ZP, int MT, int WB>
static __device__ __forceinline__ void genc_gemvq_word(float (&acc)[MT], const GencNBitsParams &p,
                                                       const typename A::S *a, int M, long long n, long long blocks,
                                                       long long w, const typename genc_word<WB>::T &word, bool vec) {
  constexpr int BLOB = BS * BITS / 8, WPB = BLOB / WB, V = WB * 8 / BITS;
  typedef typename A::S AS;
  const long long j = w / WPB, k0 = j * BS + (w % WPB) * V;
  if (k0 >= p.K) return; // the last block's padding
  const float s = S::ld(((const typename S::S *)p.scales)[n * blocks + j]);
  const float z = genc_nbits_zero<S, BITS, ZP>(p, n, j, blocks);
  const float base = ZP == 2 ? 8388608.f : 8388608.f + z; // float zero points: subtracted after
  const unsigned int *u = (const unsigned int *)&word;
  float wf[V];
#pragma unroll
  for (int i = 0; i < V; ++i) {
    constexpr int PER = 32 / BITS; // codes in a 32-bit piece
    const unsigned q = (u[i / PER] >> ((i % PER) * BITS)) & ((1u << BITS) - 1);
    wf[i] = __int_as_float(0x4B000000u | q) - base;
    if (ZP == 2) wf[i] -= z;
  }
  const bool full = k0 + V <= p.K;
#pragma unroll
  for (int m = 0; m < MT; ++m) {
    if (m >= M) break;
    const AS *ar = a + m * p.K + k0;
    float d = 0.f;
    if (vec && full) {
      alignas(16) AS av[V];
      genc_vload<AS, V>(av, ar);
#pragma unroll
      for (int i = 0; i < V; ++i) d += A::ld(av[i]) * wf[i];
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i)
        if (k0 + i < p.K) d += A::ld(ar[i]) * wf[i];
    }
    acc[m] += d * s;
  }
}

// Where the GEMV reads its rows of a: where they lie (GencNBitsDirect), or
// in shared memory, computed there by the fused row body before the product
// (a prologue policy generated per body below, as the float GEMVs' are).
struct GencNBitsDirect {
  template <typename AS>
  static __device__ __forceinline__ const AS *run(const GencGemvPrologue *, const AS *a, AS *) { return a; }
};

// What the GEMV writes: y[m, n] in y's storage (GencNBitsStore, a column a
// warp), or the elementwise GLU body after it, where that body alone reads
// y (a warp reads columns n and NO + n, and writes the body's element n to
// p.y; generated per body below).
struct GencNBitsStore {
  static constexpr int ROWS = 1;
  template <typename Y>
  static __device__ __forceinline__ void store(const GencNBitsParams &p, long long m, long long n, long long,
                                               const float (&acc)[1]) {
    ((typename Y::S *)p.y)[m * p.N + n] = Y::st(acc[0]);
  }
};

// y[M, N]: a warp an output (grid (ceil(NO / 8), ceil(M / MT)), block 256,
// NO = N / EPI::ROWS), rows blockIdx.y * MT on, MT at most; the warp reads
// the EPI::ROWS columns n, NO + n.
template <typename A, typename S, typename Y, int BITS, int BS, int ZP, int MT, typename PRO = GencNBitsDirect,
          int KS = 1, typename EPI = GencNBitsStore>
static __device__ void genc_gemvq(const GencNBitsParams &p, const GencGemvPrologue *q = nullptr) {
  constexpr int BLOB = BS * BITS / 8, WB = BLOB < 16 ? BLOB : 16, R = EPI::ROWS, U = 4 / R;
  typedef typename genc_word<WB>::T Word;
  const long long m0 = (long long)blockIdx.y * MT, NO = p.N / R;
  const int lane = threadIdx.x & 31, M = (int)(p.M - m0 < MT ? p.M - m0 : MT);
  const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const long long blocks = (p.K + BS - 1) / BS, words = blocks * (BLOB / WB);
  // A warp past the outputs still takes part in a prologue's barriers.
  const bool live = n < NO;
  const Word *col[R];
#pragma unroll
  for (int r = 0; r < R; ++r) col[r] = (const Word *)p.codes + (live ? n + r * NO : 0) * words;
  // The first words stream before the wait: the kernel before writes only a.
  Word cur[R][U];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (live && lane + u * 32 < words) cur[r][u] = col[r][lane + u * 32];
  genc_pdl_wait();
  genc_pdl_launch();
  alignas(16) __shared__ typename A::S staged[KS];
  const typename A::S *a = PRO::run(q, (const typename A::S *)p.a + m0 * p.K, staged);
  if (!live) return;
  const bool vec = (((unsigned long long)a | (unsigned long long)(p.K * sizeof(typename A::S))) & 15) == 0;
  float acc[R][MT];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;
  for (long long w0 = lane; w0 < words; w0 += U * 32) {
    Word next[R][U];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (w0 + (U + u) * 32 < words) next[r][u] = col[r][w0 + (U + u) * 32];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (w0 + u * 32 < words)
          genc_gemvq_word<A, S, BITS, BS, ZP, MT, WB>(acc[r], p, a, M, n + r * NO, blocks, w0 + u * 32, cur[r][u],
                                                      vec);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) cur[r][u] = next[r][u];
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m)
      for (int o = 16; o > 0; o >>= 1) acc[r][m] += __shfl_xor_sync(0xffffffffu, acc[r][m], o);
  if (lane != 0) return;
#pragma unroll
  for (int m = 0; m < MT; ++m)
    if (m < M) {
      float s[R];
#pragma unroll
      for (int r = 0; r < R; ++r) s[r] = acc[r][m];
      EPI::template store<Y>(p, m0 + m, n, NO, s);
    }
}

// y[M, N] for any M: a 64 x 64 tile a block (grid (ceil(N / 64),
// ceil(M / 64)), block 256 = 16 x 16 threads, each rows ty + 16i and
// columns tx + 16j), K in chunks of 32 through shared memory as f32.
template <typename A, typename S, typename Y, int BITS, int BS, int ZP>
static __device__ void genc_gemvq_tiles(const GencNBitsParams &p) {
  constexpr int T = 64, KC = 32;
  __shared__ float as[T][KC + 1], ws[T][KC + 1];
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const long long m0 = (long long)blockIdx.y * T, n0 = (long long)blockIdx.x * T;
  const long long blocks = (p.K + BS - 1) / BS;
  const typename A::S *a = (const typename A::S *)p.a;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  genc_pdl_wait();
  genc_pdl_launch();
  for (long long k0 = 0; k0 < p.K; k0 += KC) {
    for (int i = threadIdx.x; i < T * KC; i += blockDim.x) {
      const int r = i / KC, c = i % KC;
      const long long k = k0 + c, m = m0 + r, n = n0 + r;
      as[r][c] = m < p.M && k < p.K ? A::ld(a[m * p.K + k]) : 0.f;
      ws[r][c] = n < p.N && k < p.K ? genc_nbits_weight<S, BITS, BS, ZP>(p, n, k, blocks) : 0.f;
    }
    __syncthreads();
#pragma unroll 4
    for (int c = 0; c < KC; ++c) {
      float av[4], wv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[ty + 16 * i][c], wv[i] = ws[tx + 16 * i][c];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * wv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < p.M && n < p.N) ((typename Y::S *)p.y)[m * p.N + n] = Y::st(acc[i][j]);
    }
}
)";

bool isFloatStorage(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// A family with the tensor-core entries (gemvq_N_mma{1,2,4}): a 16-bit a,
// blocks of 32 or more, no float zero points.
bool mmaFamily(DType a, int64_t bs, int zp) { return (a == DType::F16 || a == DType::BF16) && bs >= 32 && zp != 2; }

// The GLU policy `name`_then: the product's columns n and NO + n (each
// rounded through y's storage, as the body's kernel would load them) into
// the body's element n, by the body's own math.
std::string gluPolicy(const std::string &name, const GemvGlu &g) {
  std::ostringstream c;
  c << "struct " << name << "_then {\n"
    << "  static constexpr int ROWS = 2;\n"
    << "  template <typename Y>\n"
    << "  static __device__ __forceinline__ void store(const GencNBitsParams &p, long long m, long long n, long long NO,\n"
    << "                                               const float (&acc)[2]) {\n"
    << "    const float t0 = Y::ld(Y::st(acc[0]));\n"
    << "    const float t1 = Y::ld(Y::st(acc[1]));\n"
    << g.stmts << "    ((" << storageType(g.outDType) << " *)p.y)[m * NO + n] = " << storageStruct(g.outDType)
    << "::st(" << g.out << ");\n  }\n};\n";
  return c.str();
}

// The 4/8-bit GEMV's one-row entry `name` (template arguments `args`) with
// the prologue policy `name`_before (withBefore) and/or the GLU `glu` after
// it: a Llama layer's add + RMSNorm before its QKV and gate/up products and
// the SwiGLU after the latter, each a kernel boundary fewer.
std::string fusedEntry(const std::string &name, const std::string &args, bool withBefore, const GemvGlu *glu,
                       int64_t K) {
  static const GemvEntryForm form{genrt::cuda::kNBitsThreads, "GencNBitsParams", "genc_gemvq", "GencNBitsDirect",
                                  "GencNBitsStore"};
  return (glu ? gluPolicy(name, *glu) : std::string()) + gemvEntryLine(form, name, args, withBefore, glu, K);
}

} // namespace

NBitsKernels emitNBitsKernels(Module &m, DType activation, const std::vector<CudaKernel> &kernels) {
  NBitsKernels out;
  std::map<std::string, std::string> familyOf; // template arguments -> name
  std::set<std::string> entries;               // the fused entries so far
  std::ostringstream code, fused;
  for (auto &f : m.functions()) {
    if (f->name() != "encode" && f->name() != "prefill" && f->name() != "decode_step")
      continue;
    std::vector<Op *> ops;
    for (auto &opp : f->ops())
      ops.push_back(opp.get());
    for (size_t i = 0; i < ops.size(); ++i) {
      Op *op = ops[i], *before = i ? ops[i - 1] : nullptr, *next = i + 1 < ops.size() ? ops[i + 1] : nullptr;
      if (!op->is("matmul_nbits") || op->numOperands() < 3 || op->numOperands() > 4)
        continue;
      const int64_t bits = op->intAttr("bits", 0), bs = op->intAttr("block_size", 0);
      const DType a = storageDType(*f, op->operand(0), activation), y = storageDType(*f, op->result(0), activation),
                  s = op->operand(2)->dtype();
      if ((bits != 4 && bits != 8) || bs < 16 || bs > 4096 || (bs & (bs - 1)) || !isFloatStorage(a) ||
          !isFloatStorage(y) || !isFloatStorage(s))
        continue; // the verifier refuses such a plan; no kernel for it
      int zp = 0;
      if (op->numOperands() == 4)
        zp = op->operand(3)->dtype() == DType::U8 ? 1 : 2;
      std::ostringstream args;
      args << storageStruct(a) << ", " << storageStruct(s) << ", " << storageStruct(y) << ", " << bits << ", " << bs
           << ", " << zp;
      auto [it, fresh] = familyOf.emplace(args.str(), "gemvq_" + std::to_string(familyOf.size()));
      op->setAttr("gpu_gemv", it->second);
      if (mmaFamily(a, bs, zp))
        op->setAttr("gpu_gemv_mma", int64_t(1));
      fused << gemvFusedEntries(m, *f, before, op, next, kernels, a, y, "4/8-bit GEMV " + it->second, it->second,
                                entries, out.names,
                                [&](const std::string &name, bool withBefore, const GemvGlu *glu, int64_t K) {
                                  return fusedEntry(name, args.str(), withBefore, glu, K);
                                });
      if (!fresh)
        continue;
      code << "// ==== 4/8-bit GEMV " << it->second << " (matmul_nbits at \"" << op->loc() << "\") ====\n";
      // One entry point: NAME(p) { TEMPLATE<family's arguments EXTRA>(p); }
      auto entry = [&](const std::string &suffix, const char *templ, const std::string &extra) {
        out.names.push_back(it->second + suffix);
        code << "extern \"C\" __global__ void __launch_bounds__(" << genrt::cuda::kNBitsThreads << ") " << it->second
             << suffix << "(const GencNBitsParams p) { " << templ << "<" << args.str() << extra << ">(p); }\n";
      };
      for (int mt : {1, 2, 4, 8})
        entry("_m" + std::to_string(mt), "genc_gemvq", ", " + std::to_string(mt));
      entry("_tiles", "genc_gemvq_tiles", "");
      if (mmaFamily(a, bs, zp)) { // genc_nbits_mma_ok's rule (NBitsMma.cpp)
        for (int mr : {1, 2, 4})
          entry("_mma" + std::to_string(mr), "genc_gemvq_mma", ", " + std::to_string(mr));
        entry("_mma_tiles", "genc_gemvq_mma_tiles", "");
      }
    }
  }
  if (familyOf.empty())
    return out;
  out.code = std::string(nbitsMmaPrimitives()) + "\n" + genrt::cuda::kGencNBitsAbiSource + "\n" + kTemplates +
             nbitsMmaTemplate() + code.str() + fused.str();
  return out;
}

} // namespace genc
