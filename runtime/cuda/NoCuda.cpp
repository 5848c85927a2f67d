// The CUDA executor's entry points in a build without the CUDA headers.
#include "runtime/cuda/CudaExecutor.h"

namespace genrt {

Status probeCuda() { return Status::error("this genrun was built without CUDA support"); }

std::unique_ptr<Executor> makeCudaExecutor(std::shared_ptr<const Plan>, const ExecutorOptions &, Status &err) {
  err = probeCuda();
  return nullptr;
}

} // namespace genrt
