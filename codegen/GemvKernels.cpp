#include "codegen/GemvKernels.h"

#include "codegen/CudaEmitter.h"
#include "codegen/CudaSyntax.h"
#include "passes/analysis/Storage.h"
#include "runtime/Epilogue.h"
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

template <typename A, typename W, typename Y, typename B, int BIAS, int ACT, int MT,
          typename PRO = GencGemvDirect, int KS = 1>
static __device__ void genc_gemv(const GencGemvParams &p, const GencGemvPrologue *q = nullptr) {
  typedef typename W::S WS;
  constexpr int V = 16 / (int)sizeof(WS); // weight elements per 16-byte word
  constexpr int STEP = 32 * V;            // a warp's elements per word
  constexpr int U = 8;                    // words in flight per lane
  const int lane = threadIdx.x & 31, M = (int)p.M;
  const long long n = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  // A warp past N still takes part in a prologue's barriers.
  const bool live = n < p.N;
  const WS *w = (const WS *)p.w + (live ? n : 0) * p.K;
  float acc[MT];
#pragma unroll
  for (int m = 0; m < MT; ++m) acc[m] = 0.f;
  // The weight's first words are loaded before the wait: they stream while
  // the kernel before (whose output is `a`) finishes.
  long long k = (long long)lane * V;
  alignas(16) WS first[U][V];
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (live && k + u * STEP < p.K) genc_vload<WS, V>(first[u], w + k + u * STEP);
  genc_pdl_wait();
  genc_pdl_launch();
  __shared__ alignas(16) typename A::S staged[KS];
  const typename A::S *a = PRO::run(q, (const typename A::S *)p.a, staged);
  if (!live) return;
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (k + u * STEP < p.K) genc_gemv_word<A, W, V, MT>(acc, a, p.K, M, k + u * STEP, first[u]);
  k += U * STEP;
  for (; k + (U - 1) * STEP < p.K; k += U * STEP) {
    alignas(16) WS wr[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) genc_vload<WS, V>(wr[u], w + k + u * STEP);
#pragma unroll
    for (int u = 0; u < U; ++u) genc_gemv_word<A, W, V, MT>(acc, a, p.K, M, k + u * STEP, wr[u]);
  }
  for (; k < p.K; k += STEP) {
    alignas(16) WS wr[V];
    genc_vload<WS, V>(wr, w + k);
    genc_gemv_word<A, W, V, MT>(acc, a, p.K, M, k, wr);
  }
#pragma unroll
  for (int m = 0; m < MT; ++m)
    for (int o = 16; o > 0; o >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);
  if (lane != 0) return;
  const float b = BIAS ? B::ld(((const typename B::S *)p.bias)[n]) : 0.f;
#pragma unroll
  for (int m = 0; m < MT; ++m)
    if (m < M) ((typename Y::S *)p.y)[m * p.N + n] = Y::st(genc_gemv_act<ACT>(acc[m] + b));
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
  if (!prev || !prev->is("fused") || mm->operand(0)->definingOp() != prev || f.soleUser(mm->operand(0)) != mm)
    return std::nullopt;
  const std::string body = prev->strAttr("body", "");
  auto k = std::find_if(kernels.begin(), kernels.end(), [&](const CudaKernel &c) { return c.name == body; });
  const size_t r = mm->operand(0)->resultIndex();
  if (k == kernels.end() || k->mode != "rows" || k->blockSize > genrt::cuda::kGemvThreads ||
      k->symbols.size() > genrt::cuda::kGemvPrologueSymbols ||
      k->inputs.size() + k->outputs.size() > genrt::cuda::kGemvProloguePointers || r >= k->outputs.size() ||
      k->outputs[r].dtype != a || K * static_cast<int64_t>(dtypeSize(a)) > genrt::cuda::kGemvPrologueBytes)
    return std::nullopt;
  return Prologue{&*k, r};
}

// The prologue policy and entry point of family `fam` (template arguments
// `args`) reading result `pro.result` of `pro.body`, K wide.
std::string prologueEntry(const std::string &fam, const std::string &args, const Prologue &pro, int64_t K) {
  const CudaKernel &k = *pro.body;
  const std::string name = genrt::cuda::gemvPrologueName(fam, k.name, pro.result);
  std::ostringstream c;
  c << "struct " << name << "_policy {\n"
    << "  template <typename S>\n"
    << "  static __device__ __forceinline__ const S *run(const GencGemvPrologue *q, const S *, S *staged) {\n"
    << "    " << k.name << "_rows(0, 1";
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
  c << "extern \"C\" __global__ void __launch_bounds__(" << genrt::cuda::kGemvThreads << ") " << name
    << "(const GencGemvParams p, const GencGemvPrologue q) { genc_gemv<" << args << ", 1, " << name << "_policy, "
    << K << ">(p, &q); }\n";
  return c.str();
}

} // namespace

GemvKernels emitGemvKernels(Module &m, DType activation, const std::vector<CudaKernel> &kernels) {
  GemvKernels out;
  std::map<std::string, std::string> familyOf; // template arguments -> name
  std::set<std::string> prologues;
  std::ostringstream code, pro;
  for (auto &f : m.functions()) {
    if (f->name() != "encode" && f->name() != "prefill" && f->name() != "decode_step")
      continue;
    Op *prev = nullptr;
    for (auto &opp : f->ops()) {
      Op *op = opp.get(), *before = prev;
      prev = op;
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
      }
      const Dim &kd = op->operand(0)->shape().empty() ? Dim(0) : op->operand(0)->shape().back();
      if (!kd.isConstant())
        continue;
      if (auto p = prologueOf(*f, before, op, kernels, kd.constant(), a)) {
        std::string name = genrt::cuda::gemvPrologueName(it->second, p->body->name, p->result);
        if (prologues.insert(name).second) {
          out.names.push_back(name);
          pro << "// ==== GEMV " << it->second << " after " << p->body->name << " (matmul at \"" << op->loc()
              << "\") ====\n"
              << prologueEntry(it->second, args.str(), *p, kd.constant());
        }
      }
    }
  }
  if (familyOf.empty())
    return out;
  out.names.push_back("genc_transpose_2");
  out.names.push_back("genc_transpose_4");
  out.code = std::string("\n") + genrt::cuda::kGencGemvAbiSource + "\n" + kTemplates + code.str() + pro.str();
  return out;
}

} // namespace genc
