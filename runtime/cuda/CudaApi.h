// The CUDA driver API, opened at run time (dlopen of libcuda.so.1), so that
// genrun links no CUDA library and runs on machines without a driver. Every
// entry point is looked up under the versioned name these headers give it
// (cuMemAlloc -> cuMemAlloc_v2, cuGraphInstantiate -> ...WithFlags), so the
// pointer has exactly the prototype the code calls it with.
#pragma once
#include "runtime/Status.h"

#include <cuda.h>

#include <string>

namespace genrt::cuda {

// X(name): one driver entry point the runtime uses.
#define GENC_CUDA_DRIVER_FUNCTIONS(X)                                                              \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxSynchronize)                                                                              \
  X(cuMemGetInfo)                                                                                  \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemAllocHost)                                                                                \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemcpyDtoH)                                                                                  \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)                                                                             \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemcpy2DAsync)                                                                               \
  X(cuMemsetD8)                                                                                    \
  X(cuMemsetD8Async)                                                                               \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuModuleGetGlobal)                                                                             \
  X(cuFuncSetAttribute)                                                                            \
  X(cuFuncGetAttribute)                                                                            \
  X(cuLaunchKernel)                                                                                \
  X(cuLaunchKernelEx)                                                                              \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                   \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamQuery)                                                                                 \
  X(cuStreamBeginCapture)                                                                          \
  X(cuStreamEndCapture)                                                                            \
  X(cuGraphInstantiate)                                                                            \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphDestroy)                                                                                \
  X(cuGraphExecDestroy)                                                                            \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuTensorMapEncodeTiled)

struct DriverApi {
#define GENC_DECLARE(name) decltype(&::name) name = nullptr;
  GENC_CUDA_DRIVER_FUNCTIONS(GENC_DECLARE)
#undef GENC_DECLARE
};

/// The driver API, opened and cuInit'ed once per process; nullptr (with the
/// reason in `err`) when this machine has no usable driver.
const DriverApi *driver(Status &err);

/// "cuMemAlloc failed: out of memory" for a failed call (`what` names it).
std::string cuError(const DriverApi &api, CUresult r, const std::string &what);

} // namespace genrt::cuda
