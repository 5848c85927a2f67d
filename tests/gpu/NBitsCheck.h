// gpucheck's rows for the 4/8-bit weight kernels (runtime/cuda/NBitsAbi.h):
// every matmul_nbits of a plan's programs, its GEMV entries and its tiled
// kernel at several row counts, against the CPU executor's kernel
// (genrt::cpu::matmulNBits) on fresh random rows of a, the output poisoned.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/cuda/Device.h"

#include <random>
#include <string>
#include <vector>

namespace gpucheck {

struct NBitsRow {
  std::string name;   // "gemvq_0_m2 M=2 (matmul_nbits at ...)"
  std::string status; // "ok", "MISMATCH" or why it did not run
  int64_t elements = 0;
  double maxAbs = 0;   // max |gpu - cpu|
  double maxRatio = 0; // max |gpu - cpu| / the element's bound (ok below 1)
  bool ok = false;
};

/// Checks every matmul_nbits of `plan` whose kernels `mod` holds; a row a
/// (op, kernel, M). False on a CUDA error (the rows so far are in `rows`).
bool checkNBitsKernels(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::cuda::KernelModule &mod,
                       std::mt19937 &rng, std::vector<NBitsRow> &rows);

} // namespace gpucheck
