// What gpucheck's kernel checks (NBitsCheck.cpp, GemvMmaCheck.cpp) share: the
// device buffers of one check, freed together, and a storage type's relative
// rounding for their bounds.
#pragma once
#include "runtime/cuda/Device.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpucheck {

/// The relative rounding of a value stored as `t`: 2^-11 f16, 2^-8 bf16, 0 f32.
inline double roundingOf(genrt::DType t) {
  return t == genrt::DType::F16 ? std::ldexp(1.0, -11) : t == genrt::DType::BF16 ? std::ldexp(1.0, -8) : 0.0;
}

/// Device allocations freed when the check ends.
struct Buffers {
  const genrt::cuda::Device &dev;
  std::vector<CUdeviceptr> all;
  ~Buffers() {
    for (CUdeviceptr p : all)
      dev.api->cuMemFree(p);
  }
  bool alloc(size_t bytes, CUdeviceptr &out) {
    if (dev.api->cuMemAlloc(&out, std::max<size_t>(bytes, 16)) != CUDA_SUCCESS)
      return false;
    all.push_back(out);
    return true;
  }
  bool upload(const void *data, size_t bytes, CUdeviceptr &out) {
    return alloc(bytes, out) && (!bytes || dev.api->cuMemcpyHtoD(out, data, bytes) == CUDA_SUCCESS);
  }
};

} // namespace gpucheck
