// The plan's GEMMs through cuBLASLt, opened at run time (dlopen), with the
// epilogues the compiler folded (bias, relu, tanh-GELU) and transpose_b.
//
//   y[M, N] = act(a[M, K] · b[K, N] + bias[N])     (row-major; b stored [N, K]
//                                                  when transpose_b)
// a, y: activations in their storage dtype; b, bias: weights as the plan
// stores them; fp32 accumulation (CUBLAS_COMPUTE_32F: no TF32 for f32
// plans, so they stay within float rounding of the CPU reference).
#pragma once
#include "runtime/DType.h"
#include "runtime/plan/Epilogue.h"
#include "runtime/Status.h"
#include "runtime/cuda/Device.h"

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace genrt::cuda {

struct GemmShape {
  DType a, b, y, bias;  // storage dtypes (bias: F32 when there is none)
  int64_t K = 0, N = 0;
  bool transB = false;
  Epilogue epilogue;
};

class Gemm {
public:
  /// Opens cuBLASLt (`library` first where given: GENC_CUBLASLT; then
  /// libcublasLt.so.13, .12, also under /usr/local/cuda) and allocates
  /// `workspaceBytes` of device workspace.
  static Status open(const Device &dev, int64_t workspaceBytes, const std::optional<std::string> &library,
                     std::unique_ptr<Gemm> &out);
  ~Gemm();

  /// Checks that cuBLASLt has an algorithm for this shape at every M it may
  /// see (a plan fails at load, not mid-run), and keeps the step's buffers
  /// (a: maxM x K, y: maxM x N elements) for warm().
  Status prepare(const GemmShape &s, int64_t maxM, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr y);
  /// Runs every prepared shape once at each power-of-two M up to its maxM
  /// and at maxM, on scratch contents, so that every kernel cuBLASLt will
  /// use is loaded before the first request (load time, not time to first
  /// token). Called at load, before any run: the buffers hold nothing yet.
  Status warm(CUstream stream);
  Status run(const GemmShape &s, int64_t M, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias,
             CUdeviceptr y, CUstream stream);
  int64_t workspaceBytes() const { return workspaceBytes_; }
  /// "cuBLASLt 13.0.2"
  const std::string &version() const { return version_; }

private:
  struct Impl;
  struct Plan; // a descriptor set + algorithm for one (shape, M)
  Status planFor(const GemmShape &s, int64_t M, Plan *&out);
  // (dtypes a, b, y, bias; K, N, transB, the epilogue; M)
  using Key = std::tuple<int, int, int, int, int64_t, int64_t, bool, bool, std::string, int64_t>;
  static Key keyOf(const GemmShape &s, int64_t M) {
    return {int(s.a), int(s.b), int(s.y), int(s.bias), s.K, s.N, s.transB, s.epilogue.bias, s.epilogue.activation, M};
  }
  std::unique_ptr<Impl> impl_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  struct Warm {
    GemmShape shape;
    int64_t maxM = 0;
    CUdeviceptr a = 0, b = 0, bias = 0, y = 0;
  };
  std::map<Key, Warm> warms_; // a shape's (M 0) largest step
  const Device *dev_ = nullptr;
  CUdeviceptr workspace_ = 0;
  int64_t workspaceBytes_ = 0;
  std::string version_;
};

} // namespace genrt::cuda
