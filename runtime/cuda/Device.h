// A GPU opened through the driver API: its primary context and the facts
// the executor sizes work by; and the plan's kernel module loaded for it.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/cuda/CudaApi.h"

#include <map>
#include <string>
#include <vector>

namespace genrt::cuda {

struct Device {
  const DriverApi *api = nullptr;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  std::string name;
  int major = 0, minor = 0; // compute capability
  int smCount = 0;
  int maxSharedPerBlock = 0; // bytes, opt-in limit
  double memoryBytesPerUs = 0; // the memory's peak: its clock, both edges, times its bus width
  int64_t freeBytes = 0, totalBytes = 0;
  /// Programmatic dependent launch (sm_90 and newer): genc's kernels may
  /// start while the stream's previous kernel drains.
  bool pdl = false;

  /// Opens GPU `ordinal` and makes its primary context current.
  static Status open(int ordinal, Device &out);
  void close();
  int arch() const { return major * 10 + minor; }
  /// Launches one of genc's generated kernels (block threads in x, y). Each
  /// of them starts with genc_pdl_wait() (codegen's prelude), so it may be
  /// launched with programmatic stream serialization: it is scheduled while
  /// the previous kernel's last blocks run, reads only weights until that
  /// kernel has finished, and its wait makes that kernel's writes visible.
  /// Never for a kernel that is not genc's (cuBLASLt's go through it).
  Status launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned shared,
                CUstream stream, void **args, const std::string &what) const;
  /// A driver call's result as a Status naming the call.
  Status check(CUresult r, const char *what) const {
    return r == CUDA_SUCCESS ? Status::ok() : Status::error(cuError(*api, r, what));
  }
};

/// The plan's kernels (one module holds every generated kernel) loaded for
/// a device: the cubin of its architecture, or one of an older minor of the
/// same major, else the newest PTX not newer than the device (JIT-compiled
/// by the driver). A plan with neither is refused, naming both sides.
class KernelModule {
public:
  Status load(const Device &dev, const Plan &plan);
  void unload();
  /// Where the code came from: "cubin sm_90", "PTX compute_80 (JIT)".
  const std::string &source() const { return source_; }
  Status function(const std::string &name, CUfunction &out) const;
  /// A `__device__` variable of the module (diagnostics); 0 where none.
  CUdeviceptr global(const std::string &name, size_t &bytes) const;

private:
  const DriverApi *api_ = nullptr;
  CUmodule mod_ = nullptr;
  std::string source_;
};

/// How a generated fused-body kernel is launched (codegen/CudaEmitter.h):
/// grid, block and dynamic shared memory from its metadata at the run's
/// symbols, then one `long long` per symbol and a pointer per parameter.
class FusedLaunch {
public:
  Status prepare(const Device &dev, const KernelModule &mod, const KernelInfo &info);
  /// `pointers`: the body's arguments then its results, device addresses.
  Status launch(const Device &dev, const std::map<std::string, int64_t> &symbols,
                const std::vector<CUdeviceptr> &pointers, CUstream stream) const;
  const KernelInfo &info() const { return *info_; }

private:
  const KernelInfo *info_ = nullptr;
  CUfunction fn_ = nullptr;
  mutable int sharedLimitSet_ = 0; // dynamic shared bytes the function was opened up to
};

} // namespace genrt::cuda
