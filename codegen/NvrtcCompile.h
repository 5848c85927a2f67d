// Ahead-of-time compilation of the emitted kernels with NVRTC: for every
// target architecture a cubin (-arch=sm_XX) and PTX (compute_XX), so the
// runtime never needs NVRTC for a listed target. Without the CUDA toolkit at
// build time (GENC_HAVE_NVRTC unset), every call reports "built without CUDA".
#pragma once
#include "codegen/CudaEmitter.h"
#include "codegen/KernelCache.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace genc {

struct CompiledKernel {
  std::string name;
  /// One entry per architecture, in the order asked: ("sm_80", bytes).
  std::vector<std::pair<std::string, std::string>> cubins;
  std::vector<std::pair<std::string, std::string>> ptx; // ("compute_80", text)
};

/// Whether this build can compile kernels (NVRTC linked in).
bool haveNvrtc();

/// Empty if `arch` names an architecture (sm_<digits>), else why not.
std::string checkGpuArchName(const std::string &arch);

/// "sm_80,sm_90" (or a list) -> {80, 90}; an error for anything not sm_<digits>.
llvm::Expected<std::vector<int>> parseGpuArchs(const std::vector<std::string> &archs);

/// Compiles one kernel for every architecture. An NVRTC failure names the
/// kernel and the architecture and carries the compiler log.
llvm::Expected<CompiledKernel> compileKernel(const CudaKernel &k, const std::vector<int> &archs);

/// Every kernel of `cm` in one NVRTC program per architecture (one cubin
/// holds all entry points, IREE-style: 2 NVRTC runs per arch instead of 2 per
/// kernel and arch). The PTX is the same run's (`.target sm_XX`, which any
/// later GPU can JIT), listed as compute_XX. On a failure each kernel is
/// compiled alone so that the error names the one at fault, with its log.
struct CompiledModule {
  std::vector<std::pair<std::string, std::string>> cubins; // ("sm_80", bytes)
  std::vector<std::pair<std::string, std::string>> ptx;    // ("compute_80", text)
  int fromCache = 0; // architectures whose code came from the kernel cache
};
/// With `cache` on, each architecture's code is looked up there first and
/// stored there once compiled (codegen/KernelCache.h).
llvm::Expected<CompiledModule> compileModule(const CudaModule &cm, const std::vector<int> &archs,
                                             const KernelCache &cache = KernelCache());

/// What the kernel cache keys an NVRTC build by: its version and the file
/// it was loaded from (path, size, time), so another toolkit misses.
std::string nvrtcIdentity();

} // namespace genc
