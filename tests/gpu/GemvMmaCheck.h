// gpucheck's rows for the tensor-core GEMV entries of 16-bit plans
// (runtime/cuda/GemvAbi.h, <family>_mma16, _mmaw{16,32,64}): every matmul of a plan's
// programs that has them, at several row counts, against a double-precision
// product on the host of the same rounded a, w and bias, the output poisoned;
// and a row's result the same bits whatever else the launch holds.
#pragma once
#include "NBitsCheck.h"

namespace gpucheck {

/// Checks every matmul of `plan` with tensor-core entries in `mod`; a row a
/// (op, entry, M). False on a CUDA error (the rows so far are in `rows`).
bool checkGemvMmaKernels(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::cuda::KernelModule &mod,
                         std::mt19937 &rng, std::vector<NBitsRow> &rows);

} // namespace gpucheck
