#include "codegen/GemvKernels.h"

#include "codegen/CudaEmitter.h"
#include "codegen/CudaSyntax.h"
#include "codegen/GemvMma.h"
#include "passes/analysis/GemvNeighbours.h"
#include "passes/analysis/Storage.h"
#include "runtime/Env.h"
#include "runtime/plan/Epilogue.h"
#include "runtime/cuda/GemvAbi.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace genc {
namespace {

const char *kTemplates = R"(
// ---- genc GEMV templates ---------------------------------------------------
//   y[M, N] = act(a[M, K] . w[N, K]^T + bias[N]),  M <= MT
// A, W, Y, B: storage types (genc_f32 / genc_f16 / genc_bf16); ACT: 0 none,
// 1 relu, 2 tanh-GELU (cuBLASLt's GELU epilogue).
template <int ACT> static __device__ __forceinline__ float genc_gemv_act(float x) {
  if (ACT == 1) return x > 0.f ? x : 0.f;
  if (ACT == 2) return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  return x;
}

// a's V elements at k, dotted with the weight word wr, into acc[m].
template <typename A, typename W, int V, int MT>
static __device__ __forceinline__ void genc_gemv_word(float (&acc)[MT], const typename A::S *a, long long K, int M,
                                                      long long k, const typename W::S (&wr)[V]) {
  float wf[V];
#pragma unroll
  for (int i = 0; i < V; ++i) wf[i] = W::ld(wr[i]);
#pragma unroll
  for (int m = 0; m < MT; ++m) {
    if (m >= M) break;
    alignas(16) typename A::S ar[V];
    genc_vload<typename A::S, V>(ar, a + m * K + k);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < V; ++i) s += A::ld(ar[i]) * wf[i];
    acc[m] += s;
  }
}

// Where the GEMV reads its row of a: where it lies (GencGemvDirect), or in
// shared memory, computed there by the fused row kernel before the matmul
// (a prologue, generated per body below the templates).
struct GencGemvDirect {
  template <typename S>
  static __device__ __forceinline__ const S *run(const GencGemvPrologue *, const S *a, S *) { return a; }
};

// What the GEMV writes: y = act(a . w^T + bias) (GencGemvStore, a weight
// row a warp), or the elementwise body after it where that body alone reads
// y as a GLU (act(gate) * up over y's two halves: a warp reads the weight
// rows of gate n and up n, and writes the body's element n; generated per
// body below the templates).
struct GencGemvStore {
  static constexpr int ROWS = 1;
  template <typename Y, typename B, int BIAS, int ACT>
  static __device__ __forceinline__ void store(const GencGemvParams &p, long long n, long long, int m,
                                               const float (&acc)[1]) {
    const float b = BIAS ? B::ld(((const typename B::S *)p.bias)[n]) : 0.f;
    ((typename Y::S *)p.y)[m * p.N + n] = Y::st(genc_gemv_act<ACT>(acc[0] + b));
  }
};

template <typename A, typename W, typename Y, typename B, int BIAS, int ACT, int MT,
          typename PRO = GencGemvDirect, int KS = 1, typename EPI = GencGemvStore>
static __device__ void genc_gemv(const GencGemvParams &p, const GencGemvPrologue *q = nullptr) {
  typedef typename W::S WS;
  constexpr int V = 16 / (int)sizeof(WS); // weight elements per 16-byte word
  constexpr int STEP = 32 * V;            // a warp's elements per word
  constexpr int R = EPI::ROWS;            // weight rows a warp reads
  constexpr int U = 8 / R;                // words in flight per lane and row
  const int lane = threadIdx.x & 31, M = (int)p.M;
  const long long NO = p.N / R;           // outputs (p.N: the weight's rows)
  const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  // A warp past the outputs still takes part in a prologue's barriers.
  const bool live = n < NO;
  const WS *w[R];
#pragma unroll
  for (int r = 0; r < R; ++r) w[r] = (const WS *)p.w + (live ? n + r * NO : 0) * p.K;
  float acc[R][MT];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;
  // The weight's first words are loaded before the wait: they stream while
  // the kernel before (whose output is `a`) finishes.
  long long k = (long long)lane * V;
  alignas(16) WS first[R][U][V];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (live && k + u * STEP < p.K) genc_vload<WS, V>(first[r][u], w[r] + k + u * STEP);
  genc_pdl_wait();
  genc_pdl_launch();
  __shared__ alignas(16) typename A::S staged[KS];
  const typename A::S *a = PRO::run(q, (const typename A::S *)p.a, staged);
  if (!live) return;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (k + u * STEP < p.K) genc_gemv_word<A, W, V, MT>(acc[r], a, p.K, M, k + u * STEP, first[r][u]);
  k += U * STEP;
  for (; k + (U - 1) * STEP < p.K; k += U * STEP) {
    alignas(16) WS wr[R][U][V];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) genc_vload<WS, V>(wr[r][u], w[r] + k + u * STEP);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) genc_gemv_word<A, W, V, MT>(acc[r], a, p.K, M, k + u * STEP, wr[r][u]);
  }
  for (; k < p.K; k += STEP) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      alignas(16) WS wr[V];
      genc_vload<WS, V>(wr, w[r] + k);
      genc_gemv_word<A, W, V, MT>(acc[r], a, p.K, M, k, wr);
    }
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
      EPI::template store<Y, B, BIAS, ACT>(p, n, NO, m, s);
    }
}

// src [rows, cols] -> dst [cols, rows], 32 x 32 tiles through shared memory.
template <typename T>
static __device__ void genc_transpose(const GencTransposeParams &p) {
  __shared__ T tile[32][33];
  genc_pdl_wait();
  genc_pdl_launch();
  const long long c0 = (long long)blockIdx.x * 32, r0 = (long long)blockIdx.y * 32;
  const T *src = (const T *)p.src;
  T *dst = (T *)p.dst;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    long long r = r0 + i, c = c0 + threadIdx.x;
    if (r < p.rows && c < p.cols) tile[i][threadIdx.x] = src[r * p.cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    long long c = c0 + i, r = r0 + threadIdx.x;
    if (c < p.cols && r < p.rows) dst[c * p.rows + r] = tile[threadIdx.x][i];
  }
}
extern "C" __global__ void __launch_bounds__(256) genc_transpose_2(const GencTransposeParams p) { genc_transpose<unsigned short>(p); }
extern "C" __global__ void __launch_bounds__(256) genc_transpose_4(const GencTransposeParams p) { genc_transpose<unsigned int>(p); }
)";

bool isFloatStorage(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// The matmul right after a fused row kernel whose result `o` only it reads:
// a one-row GEMV that runs the body's row itself (`<body>_rows`, block 0
// writing the body's other results), its row of `a` in shared memory — one
// kernel boundary fewer (an add + RMSNorm before each of a Llama layer's
// projections). The runtime uses it when the run has one row.
struct Prologue {
  const CudaKernel *body;
  size_t result;
};
std::optional<Prologue> prologueOf(const Function &f, Op *prev, Op *mm, const std::vector<CudaKernel> &kernels,
                                   int64_t K, DType a) {
  if (!gemvMayRunBefore(f, prev, mm))
    return std::nullopt;
  const std::string body = prev->strAttr("body", "");
  auto k = std::find_if(kernels.begin(), kernels.end(), [&](const CudaKernel &c) { return c.name == body; });
  const size_t r = mm->operand(0)->resultIndex();
  if (k == kernels.end() || k->mode != "rows" || k->blockSize > genrt::cuda::kGemvThreads ||
      k->symbols.size() > genrt::cuda::kGemvPrologueSymbols ||
      k->inputs.size() + k->outputs.size() > genrt::cuda::kGemvProloguePointers || r >= k->outputs.size() ||
      k->outputs[r].dtype != a || K * static_cast<int64_t>(dtypeSize(a)) > genrt::cuda::kGemvPrologueBytes)
    return std::nullopt;
  // The staged row, the row function's 32 floats and its own rows within
  // a launch's shared memory without opting in (a Llama-70B's f16 row of
  // 8192 with its f32 copy would not fit).
  if (k->sharedFloats.isConstant() &&
      (K * static_cast<int64_t>(dtypeSize(a)) + 15) / 16 * 16 + 128 + k->sharedFloats.constant() * 4 >
          genrt::cuda::kGemvSharedLimit)
    return std::nullopt;
  return Prologue{&*k, r};
}

// The prologue policy `name`_before reading result `pro.result` of `pro.body`.
std::string prologuePolicy(const std::string &name, const Prologue &pro) {
  const CudaKernel &k = *pro.body;
  std::ostringstream c;
  c << "struct " << name << "_before {\n"
    << "  template <typename S>\n"
    << "  static __device__ __forceinline__ const S *run(const GencGemvPrologue *q, const S *, S *staged) {\n"
    << "    extern __shared__ float genc_smem[];\n"
    << "    __shared__ float genc_red[32];\n"
    << "    " << k.name << "_rows(0, 1, genc_smem, genc_red";
  for (size_t i = 0; i < k.symbols.size(); ++i)
    c << ", q->sym[" << i << "]";
  size_t at = 0;
  for (const auto &in : k.inputs)
    c << ", (const " << storageType(in.dtype) << " *)q->ptr[" << at++ << "]";
  for (size_t i = 0; i < k.outputs.size(); ++i, ++at)
    c << (i == pro.result ? ", (" + storageType(k.outputs[i].dtype) + " *)staged"
                          : ", blockIdx.x == 0 ? (" + storageType(k.outputs[i].dtype) + " *)q->ptr[" +
                                std::to_string(at) + "] : nullptr");
  c << ");\n    return staged;\n  }\n};\n";
  return c.str();
}

// The elementwise body right after matmul `mm` that alone reads its result
// y [.., 2h] as a GLU: one split of y's last axis into halves, then float
// elementwise math (and scalar constants) down to one result [.., h]. Its
// math as statements over t0 = gate and t1 = up (each rounded through y's
// storage first, as the body's kernel would load them), the result `out`.
std::optional<GemvGlu> gluOf(const Module &m, const Function &f, Op *mm, Op *next, const std::vector<CudaKernel> &kernels,
                         DType y) {
  if (!gemvMayRunAfter(f, mm, next))
    return std::nullopt;
  const std::string name = next->strAttr("body", "");
  auto k = std::find_if(kernels.begin(), kernels.end(), [&](const CudaKernel &c) { return c.name == name; });
  const Function *body = m.function(name);
  if (k == kernels.end() || !body || k->inputs.size() != 1 || k->inputs[0].dtype != y || k->outputs.size() != 1 ||
      body->arguments().size() != 1 || body->outputs().size() != 1)
    return std::nullopt;
  const Value *in = body->arguments()[0].get();
  const Shape &ys = in->shape();
  if (ys.empty() || !ys.back().isConstant() || ys.back().constant() % 2)
    return std::nullopt;
  const int64_t h = ys.back().constant() / 2;
  Shape half(ys.begin(), ys.end() - 1);
  half.push_back(Dim(h));
  std::map<const Value *, std::string> expr;
  GemvGlu g{k->name, "", "", k->outputs[0].dtype};
  int t = 2;
  for (auto &op : body->ops()) {
    if (op->is("constant")) {
      const Tensor *c = op->tensorAttr("value");
      if (!c || c->numElements() != 1 || domOf(op->result(0)->dtype()) != Dom::F)
        return std::nullopt;
      expr[op->result(0)] = floatLit(c->castTo(DType::F32).data<float>()[0]);
      continue;
    }
    if (op->is("split")) {
      if (op->operand(0) != in || op->numResults() != 2 || !expr.empty() ||
          (op->intAttr("axis", 0) + in->rank()) % in->rank() != in->rank() - 1 || op->result(0)->shape() != half ||
          op->result(1)->shape() != half)
        return std::nullopt;
      expr[op->result(0)] = "t0";
      expr[op->result(1)] = "t1";
      continue;
    }
    std::vector<std::string> a;
    for (Value *o : op->operands()) {
      auto e = expr.find(o);
      if (e == expr.end())
        return std::nullopt; // y itself, or anything not a half or a scalar
      a.push_back(e->second);
    }
    if (op->numResults() != 1 || domOf(op->result(0)->dtype()) != Dom::F || op->result(0)->shape() != half)
      return std::nullopt;
    std::string why, e = elementwiseExpr(*op, a, why);
    if (e.empty())
      return std::nullopt;
    std::string v = "t" + std::to_string(t++);
    g.stmts += "    const float " + v + " = " + e + ";\n";
    expr[op->result(0)] = v;
  }
  auto o = expr.find(body->outputs()[0].value);
  if (o == expr.end() || o->second.rfind("t", 0) != 0 || o->second == "t0" || o->second == "t1")
    return std::nullopt;
  g.out = o->second;
  return g;
}

std::string gluPolicy(const std::string &name, const GemvGlu &g) {
  std::ostringstream c;
  c << "struct " << name << "_then {\n"
    << "  static constexpr int ROWS = 2;\n"
    << "  template <typename Y, typename B, int BIAS, int ACT>\n"
    << "  static __device__ __forceinline__ void store(const GencGemvParams &p, long long n, long long NO, int m,\n"
    << "                                               const float (&acc)[2]) {\n"
    << "    const float t0 = Y::ld(Y::st(genc_gemv_act<ACT>(acc[0] + (BIAS ? B::ld(((const typename B::S *)p.bias)[n]) : 0.f))));\n"
    << "    const float t1 = Y::ld(Y::st(genc_gemv_act<ACT>(acc[1] + (BIAS ? B::ld(((const typename B::S *)p.bias)[NO + n]) : 0.f))));\n"
    << g.stmts << "    ((" << storageType(g.outDType) << " *)p.y)[m * NO + n] = " << storageStruct(g.outDType)
    << "::st(" << g.out << ");\n  }\n};\n";
  return c.str();
}

// The float GEMV's one-row entry `name` (template arguments `args`) with the
// prologue policy `name`_before (withBefore) and/or the GLU `glu` after it.
std::string fusedEntry(const std::string &name, const std::string &args, bool withBefore, const GemvGlu *glu,
                       int64_t K) {
  static const GemvEntryForm form{genrt::cuda::kGemvThreads, "GencGemvParams", "genc_gemv", "GencGemvDirect",
                                  "GencGemvStore"};
  return (glu ? gluPolicy(name, *glu) : std::string()) + gemvEntryLine(form, name, args, withBefore, glu, K);
}

// The tensor-core entries (GemvAbi.h): `name`_mma16 (32 weight rows a
// block, warps splitting K) and, with GENC_GEMV_MMA_WIDE=1 at compile time,
// `name`_mmaw{16,32,64} (64 a block, a's rows in shared memory; their
// form of 2026-12-07 was half as fast as cuBLASLt at 32 and 64 rows, and
// the form since is not yet timed there, so plans leave them out and
// NVRTC's time with them), storing through `store`
// (GencGemvStore, or a GLU's `name`_then); their names go to `names`.
std::string mmaEntries(const std::string &name, const std::string &args, const std::string &store,
                       std::vector<std::string> &names) {
  std::ostringstream c;
  const std::string head =
      "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(genrt::cuda::kGemvThreads) + ") ";
  names.push_back(genrt::cuda::gemvMmaName(name, 16));
  c << head << names.back() << "(const GencGemvParams p) { genc_gemv_mma<" << args << ", 1, "
    << genrt::cuda::kGemvMmaOutputs / 8 << ", " << store << ">(p); }\n";
  if (genrt::env::choice("GENC_GEMV_MMA_WIDE", {0, 1}, 0) == 0)
    return c.str();
  const int rounds = genrt::env::choice("GENC_GEMV_MMA_WIDE_ROUNDS", {4, 8}, 4);
  for (int mr : {1, 2, 4}) {
    names.push_back(genrt::cuda::gemvMmaWideName(name, 16 * mr));
    c << head << names.back() << "(const GencGemvParams p) { genc_gemv_mma_wide<" << args << ", " << mr << ", "
      << store << ", " << rounds << ">(p); }\n";
  }
  return c.str();
}

} // namespace

std::string gemvEntryLine(const GemvEntryForm &form, const std::string &name, const std::string &args,
                          bool withBefore, bool glu, int64_t K) {
  std::ostringstream c;
  c << "extern \"C\" __global__ void __launch_bounds__(" << form.threads << ") " << name << "(const " << form.params
    << " p" << (withBefore ? ", const GencGemvPrologue q" : "") << ") { " << form.kernel << "<" << args << ", 1, "
    << (withBefore ? name + "_before, " + std::to_string(K) : std::string(form.direct) + ", 1") << ", "
    << (glu ? name + "_then" : std::string(form.store)) << ">(p" << (withBefore ? ", &q" : "") << "); }\n";
  return c.str();
}

bool gemvGluCode(const Module &m, const Function &f, Op *mm, Op *next, const std::vector<CudaKernel> &kernels, DType y,
                 std::string &stmts, std::string &out, DType &outDType) {
  auto g = gluOf(m, f, mm, next, kernels, y);
  if (!g)
    return false;
  stmts = g->stmts;
  out = g->out;
  outDType = g->outDType;
  return true;
}

std::string gemvFusedEntries(const Module &m, const Function &f, Op *before, Op *mm, Op *next,
                             const std::vector<CudaKernel> &kernels, DType a, DType y, const std::string &heading,
                             const std::string &family, std::set<std::string> &seen, std::vector<std::string> &names,
                             const GemvEntryCode &entry) {
  const Dim kd = mm->operand(0)->shape().empty() ? Dim(0) : mm->operand(0)->shape().back();
  if (!kd.isConstant())
    return "";
  const auto p = prologueOf(f, before, mm, kernels, kd.constant(), a);
  const auto g = gluOf(m, f, mm, next, kernels, y);
  if (p) // the executor's one-row runs launch these inside the GEMV (for the stats)
    before->setAttr("gpu_in_gemv", int64_t(1));
  if (g)
    next->setAttr("gpu_in_gemv", int64_t(1));
  std::ostringstream c;
  // Each with the body before alone, the body after alone, and both.
  for (int which = 1; which < 4; ++which) {
    const bool useP = which & 1, useG = which & 2;
    if ((useP && !p) || (useG && !g))
      continue;
    std::string name = genrt::cuda::gemvEntryName(family, useP ? p->body->name : "", useP ? p->result : 0,
                                                  useG ? g->body : "");
    if (!seen.insert(name).second)
      continue;
    names.push_back(name);
    c << "// ==== " << heading << (useP ? " after " + p->body->name : "") << (useG ? " then " + g->body : "")
      << " (" << mm->kind() << " at \"" << mm->loc() << "\") ====\n";
    if (useP)
      c << prologuePolicy(name, *p);
    c << entry(name, useP, useG ? &*g : nullptr, kd.constant());
  }
  return c.str();
}

GemvKernels emitGemvKernels(Module &m, DType activation, const std::vector<CudaKernel> &kernels) {
  GemvKernels out;
  std::map<std::string, std::string> familyOf; // template arguments -> name
  std::set<std::string> prologues;
  std::ostringstream code, pro;
  for (auto &f : m.functions()) {
    if (f->name() != "encode" && f->name() != "prefill" && f->name() != "decode_step")
      continue;
    std::vector<Op *> ops;
    for (auto &opp : f->ops())
      ops.push_back(opp.get());
    for (size_t i = 0; i < ops.size(); ++i) {
      Op *op = ops[i], *before = i ? ops[i - 1] : nullptr, *next = i + 1 < ops.size() ? ops[i + 1] : nullptr;
      if (!op->is("matmul") || op->numOperands() < 2 || !op->operand(1)->isWeight() ||
          op->operand(1)->shape().size() != 2)
        continue;
      genrt::Epilogue e;
      if (!genrt::parseEpilogue(op->strAttr("epilogue", ""), e) || e.bias != (op->numOperands() == 3))
        continue;
      DType a = storageDType(*f, op->operand(0), activation), w = op->operand(1)->dtype(),
            y = storageDType(*f, op->result(0), activation),
            b = e.bias ? storageDType(*f, op->operand(2), activation) : DType::F32;
      if (!isFloatStorage(a) || !isFloatStorage(w) || !isFloatStorage(y) || !isFloatStorage(b))
        continue;
      const int act = e.activation == "relu" ? 1 : e.activation == "gelu_tanh" ? 2 : 0;
      // The tensor-core entries: a and w of one 16-bit type (the mma's).
      const bool mma = a == w && (a == DType::F16 || a == DType::BF16);
      std::ostringstream args;
      args << storageStruct(a) << ", " << storageStruct(w) << ", " << storageStruct(y) << ", "
           << storageStruct(b) << ", " << e.bias << ", " << act;
      auto [it, fresh] = familyOf.emplace(args.str(), "gemv_" + std::to_string(familyOf.size()));
      op->setAttr("gpu_gemv", it->second);
      if (fresh) {
        code << "// ==== GEMV " << it->second << " (matmul at \"" << op->loc() << "\") ====\n";
        for (int mt : {1, 2, 4, 8}) {
          std::string name = it->second + "_m" + std::to_string(mt);
          out.names.push_back(name);
          code << "extern \"C\" __global__ void __launch_bounds__(" << genrt::cuda::kGemvThreads << ") " << name
               << "(const GencGemvParams p) { genc_gemv<" << args.str() << ", " << mt << ">(p); }\n";
        }
        if (mma)
          code << mmaEntries(it->second, args.str(), "GencGemvStore", out.names);
      }
      pro << gemvFusedEntries(m, *f, before, op, next, kernels, a, y, "GEMV " + it->second, it->second, prologues,
                              out.names, [&](const std::string &name, bool withBefore, const GemvGlu *glu, int64_t K) {
                                std::string c = fusedEntry(name, args.str(), withBefore, glu, K);
                                if (mma && glu && !withBefore) // a GLU after 2 to 64 rows
                                  c += mmaEntries(name, args.str(), name + "_then", out.names);
                                return c;
                              });
    }
  }
  if (familyOf.empty())
    return out;
  out.names.push_back("genc_transpose_2");
  out.names.push_back("genc_transpose_4");
  out.code = std::string(gemvMmaPrimitives()) + "\n" + genrt::cuda::kGencGemvAbiSource + "\n" + kTemplates + gemvMmaTemplates() +
             code.str() + pro.str();
  return out;
}

} // namespace genc
