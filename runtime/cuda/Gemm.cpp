// The plan's GEMMs through cuBLASLt opened at run time (Gemm.h): the
// library's entry points, a matmul description and algorithm per shape and
// M bucket, and the warm-up that loads their kernels at load.
#include "runtime/cuda/Gemm.h"


#include <cublasLt.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace genrt::cuda {

#define GENC_CUBLASLT_FUNCTIONS(X)                                                                 \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy)                                                                               \
  X(cublasLtGetVersion)                                                                            \
  X(cublasLtGetStatusString)                                                                       \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutDestroy)                                                                   \
  X(cublasLtMatmulPreferenceCreate)                                                                \
  X(cublasLtMatmulPreferenceDestroy)                                                               \
  X(cublasLtMatmulPreferenceSetAttribute)                                                          \
  X(cublasLtMatmulAlgoGetHeuristic)                                                                \
  X(cublasLtMatmulAlgoCheck)                                                                       \
  X(cublasLtMatmul)

struct Gemm::Impl {
  void *lib = nullptr;
#define GENC_DECLARE(name) decltype(&::name) name = nullptr;
  GENC_CUBLASLT_FUNCTIONS(GENC_DECLARE)
#undef GENC_DECLARE
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;

  Status check(cublasStatus_t s, const char *what) const {
    if (s == CUBLAS_STATUS_SUCCESS)
      return Status::ok();
    const char *msg = cublasLtGetStatusString ? cublasLtGetStatusString(s) : nullptr;
    return Status::error(std::string(what) + " failed: " + (msg ? msg : "cuBLAS status " + std::to_string(s)));
  }
};

struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ly = nullptr;
  cublasLtMatmulAlgo_t algo;
};

namespace {

cudaDataType_t cudaType(DType t) {
  return t == DType::F16 ? CUDA_R_16F : t == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

// Where cuBLASLt may be: `library` (GENC_CUBLASLT), the loader's path, the
// toolkit.
std::vector<std::string> candidates(const std::optional<std::string> &library) {
  std::vector<std::string> c;
  if (library)
    c.push_back(*library);
  for (const char *n : {"libcublasLt.so.13", "libcublasLt.so.12"}) {
    c.push_back(n);
    c.push_back(std::string("/usr/local/cuda/lib64/") + n);
    c.push_back(std::string("/usr/local/cuda/targets/x86_64-linux/lib/") + n);
  }
  return c;
}

} // namespace

Status Gemm::open(const Device &dev, int64_t workspaceBytes, const std::optional<std::string> &library,
                  std::unique_ptr<Gemm> &out) {
  auto g = std::unique_ptr<Gemm>(new Gemm());
  g->impl_ = std::make_unique<Impl>();
  Impl &I = *g->impl_;
  std::string tried;
  for (const std::string &path : candidates(library)) {
    I.lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (I.lib)
      break;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  if (!I.lib)
    return Status::error("cuBLASLt not found (tried " + tried + "; set GENC_CUBLASLT)");
  std::string missing;
#define GENC_RESOLVE(name)                                                                         \
  I.name = reinterpret_cast<decltype(I.name)>(dlsym(I.lib, #name));                                \
  if (!I.name)                                                                                     \
    missing += std::string(missing.empty() ? "" : ", ") + #name;
  GENC_CUBLASLT_FUNCTIONS(GENC_RESOLVE)
#undef GENC_RESOLVE
  if (!missing.empty())
    return Status::error("cuBLASLt lacks " + missing);
  size_t v = I.cublasLtGetVersion();
  g->version_ = "cuBLASLt " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                std::to_string(v % 100);
  if (Status s = I.check(I.cublasLtCreate(&I.handle), "cublasLtCreate"); !s)
    return s;
  if (Status s = I.check(I.cublasLtMatmulPreferenceCreate(&I.pref), "cublasLtMatmulPreferenceCreate"); !s)
    return s;
  uint64_t ws = static_cast<uint64_t>(workspaceBytes);
  if (Status s = I.check(I.cublasLtMatmulPreferenceSetAttribute(I.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                &ws, sizeof ws),
                         "setting the cuBLASLt workspace");
      !s)
    return s;
  g->dev_ = &dev;
  if (workspaceBytes > 0)
    if (Status s = dev.check(dev.api->cuMemAlloc(&g->workspace_, workspaceBytes), "allocating the cuBLASLt workspace");
        !s)
      return s;
  g->workspaceBytes_ = workspaceBytes;
  out = std::move(g);
  return Status::ok();
}

Gemm::~Gemm() {
  if (!impl_)
    return;
  Impl &I = *impl_;
  for (auto &[k, p] : plans_) {
    if (p->desc)
      I.cublasLtMatmulDescDestroy(p->desc);
    for (auto l : {p->la, p->lb, p->ly})
      if (l)
        I.cublasLtMatrixLayoutDestroy(l);
  }
  if (I.pref)
    I.cublasLtMatmulPreferenceDestroy(I.pref);
  if (I.handle)
    I.cublasLtDestroy(I.handle);
  if (workspace_ && dev_)
    dev_->api->cuMemFree(workspace_);
}

namespace {
// The M whose algorithm an M uses: the next power of two. Prefill sizes M
// by its tokens, so a plan sees many; one algorithm a bucket means few
// distinct kernels, all loaded by warm() at load (cuBLASLt's kernels load
// lazily, 2-10 ms each on first launch: most of a 4-layer model's 19.6 ms
// to the first token on an H200, 2026-11-28; docs/performance.md, "Time to
// first token: cuBLASLt's kernels loaded at load").
int64_t bucketOf(int64_t M) {
  int64_t b = 1;
  while (b < M)
    b *= 2;
  return b;
}
} // namespace

// Row-major y[M,N] = a[M,K]·b[K,N] is column-major yᵀ[N,M] = bᵀ[N,K]·aᵀ[K,M]:
// cuBLASLt's A is our b (N x K, or its transpose when b is stored [N, K]),
// its B is our a, and a bias of N per row of its D is our per-column bias.
Status Gemm::planFor(const GemmShape &s, int64_t M, Plan *&out) {
  const Key key = keyOf(s, M);
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    out = it->second.get();
    return Status::ok();
  }
  Plan *bucket = nullptr;
  if (int64_t b = bucketOf(M); b != M)
    if (Status st = planFor(s, b, bucket); !st)
      bucket = nullptr; // this M asks cuBLASLt itself
  Impl &I = *impl_;
  auto p = std::make_unique<Plan>();
  Status st = I.check(I.cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasOperation_t opA = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N, opB = CUBLAS_OP_N;
  if (st)
    st = I.check(I.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA), "TRANSA");
  if (st)
    st = I.check(I.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB), "TRANSB");
  cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_DEFAULT;
  const std::string &act = s.epilogue.activation;
  if (s.epilogue.bias)
    ep = act == "relu" ? CUBLASLT_EPILOGUE_RELU_BIAS : act == "gelu_tanh" ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else
    ep = act == "relu" ? CUBLASLT_EPILOGUE_RELU : act == "gelu_tanh" ? CUBLASLT_EPILOGUE_GELU : CUBLASLT_EPILOGUE_DEFAULT;
  if (st)
    st = I.check(I.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep), "EPILOGUE");
  if (st && s.epilogue.bias) {
    cudaDataType_t bt = cudaType(s.bias);
    st = I.check(I.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt),
                 "BIAS_DATA_TYPE");
  }
  // Our b: stored [K, N] row-major = column-major N x K (ld N); or stored
  // [N, K] = column-major K x N (ld K), transposed by opA.
  if (st)
    st = I.check(s.transB ? I.cublasLtMatrixLayoutCreate(&p->la, cudaType(s.b), s.K, s.N, s.K)
                          : I.cublasLtMatrixLayoutCreate(&p->la, cudaType(s.b), s.N, s.K, s.N),
                 "the weight's layout");
  if (st)
    st = I.check(I.cublasLtMatrixLayoutCreate(&p->lb, cudaType(s.a), s.K, M, s.K), "the input's layout");
  if (st)
    st = I.check(I.cublasLtMatrixLayoutCreate(&p->ly, cudaType(s.y), s.N, M, s.N), "the result's layout");
  if (!st)
    return st;
  cublasLtMatmulHeuristicResult_t result;
  if (bucket && I.cublasLtMatmulAlgoCheck(I.handle, p->desc, p->la, p->lb, p->ly, p->ly, &bucket->algo, &result) ==
                    CUBLAS_STATUS_SUCCESS &&
      result.workspaceSize <= static_cast<size_t>(workspaceBytes_)) {
    p->algo = bucket->algo;
    out = p.get();
    plans_[key] = std::move(p);
    return Status::ok();
  }
  int found = 0;
  st = I.check(I.cublasLtMatmulAlgoGetHeuristic(I.handle, p->desc, p->la, p->lb, p->ly, p->ly, I.pref, 1,
                                                &result, &found),
               "cublasLtMatmulAlgoGetHeuristic");
  if (st && found == 0)
    st = Status::error("no algorithm");
  if (!st)
    return Status::error("cuBLASLt has no GEMM for " + std::string(dtypeName(s.a)) + " [" + std::to_string(M) +
                         ", " + std::to_string(s.K) + "] x " + dtypeName(s.b) + " [" + std::to_string(s.K) +
                         ", " + std::to_string(s.N) + "] -> " + dtypeName(s.y) + " with epilogue '" +
                         epilogueName(s.epilogue) + "': " + st.message());
  p->algo = result.algo;
  out = p.get();
  plans_[key] = std::move(p);
  return Status::ok();
}

Status Gemm::prepare(const GemmShape &s, int64_t maxM, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias,
                     CUdeviceptr y) {
  Plan *p;
  for (int64_t M = 1; M < maxM; M *= 2)
    if (Status st = planFor(s, M, p); !st)
      return st;
  if (Status st = planFor(s, maxM, p); !st)
    return st;
  Warm &w = warms_[keyOf(s, 0)];
  if (maxM > w.maxM)
    w = Warm{s, maxM, a, b, bias, y};
  return Status::ok();
}

Status Gemm::warm(CUstream stream) {
  for (const auto &[key, w] : warms_) {
    for (int64_t M = 1; M < w.maxM; M *= 2)
      if (Status st = run(w.shape, M, w.a, w.b, w.bias, w.y, stream); !st)
        return st;
    if (Status st = run(w.shape, w.maxM, w.a, w.b, w.bias, w.y, stream); !st)
      return st;
  }
  warms_.clear();
  return Status::ok();
}

Status Gemm::run(const GemmShape &s, int64_t M, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias,
                 CUdeviceptr y, CUstream stream) {
  if (M == 0)
    return Status::ok();
  Plan *p;
  if (Status st = planFor(s, M, p); !st)
    return st;
  Impl &I = *impl_;
  if (s.epilogue.bias) {
    void *bp = reinterpret_cast<void *>(bias);
    if (Status st = I.check(I.cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp,
                                                             sizeof bp),
                            "BIAS_POINTER");
        !st)
      return st;
  }
  const float one = 1.f, zero = 0.f;
  return I.check(I.cublasLtMatmul(I.handle, p->desc, &one, reinterpret_cast<void *>(b), p->la,
                                  reinterpret_cast<void *>(a), p->lb, &zero, reinterpret_cast<void *>(y), p->ly,
                                  reinterpret_cast<void *>(y), p->ly, &p->algo, reinterpret_cast<void *>(workspace_),
                                  static_cast<size_t>(workspaceBytes_), reinterpret_cast<cudaStream_t>(stream)),
                 "cublasLtMatmul");
}

} // namespace genrt::cuda
