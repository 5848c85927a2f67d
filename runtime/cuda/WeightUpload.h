// The plan's weights on the device: uploaded once, at load, into the
// "weights" allocation (each at a 256-byte boundary, in plan order), those
// that only GEMV-able matmuls read laid out [N, K] by the plan's transpose
// kernel.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/cuda/Device.h"

#include <vector>

namespace genrt::cuda {

/// Marks in `transposed` (one entry a plan weight, zeros on entry) the
/// weights that only matmuls read, as b of [K, N], in plans whose matmuls
/// name GEMV kernels (`gpu_gemv`): 2-D, 16 or 32 bits, not empty.
void chooseTransposedWeights(const Plan &p, std::vector<char> &transposed);

/// Uploads each weight from `at` on, its address appended to `ptrs`; a
/// weight marked in `transposed` goes through a staging buffer and the
/// plan's transpose kernel. Without room for the staging buffer (or the
/// kernels) the marks are cleared and every weight stays as the plan lays
/// it out: cuBLASLt reads them either way.
Status uploadWeights(const Device &dev, const KernelModule &mod, const Plan &plan, CUdeviceptr at,
                     std::vector<char> &transposed, std::vector<CUdeviceptr> &ptrs);

} // namespace genrt::cuda
