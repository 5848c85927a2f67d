// The CPU executor: runs a plan's programs in exact float32 with the shared
// CPU kernels (runtime/cpu/ops), over one arena laid out by the plan and the
// caches of its KvLayout. The reference every other executor is checked
// against, and what a machine without a GPU runs.
#pragma once
#include "runtime/Executor.h"

#include <memory>
#include <vector>

namespace genrt {

/// Resolves every op of the plan to its CPU implementation and allocates the
/// weights (widened to f32), arena and caches. Fails with a message naming
/// the first op it cannot run, or, before allocating, when the plan needs
/// more memory than the machine has.
std::unique_ptr<Executor> makeCpuExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                          Status &err);

/// Per plan weight: true for what the CPU executor reads as stored instead of
/// widening it into the kernels' value domain (f32, i64): a bf16 matrix that
/// only matmuls read (as their weight), and the u8 codes and packed zero
/// points of matmul_nbits. CpuMemory.cpp.
std::vector<char> cpuKeptWeights(const Plan &plan);

/// Bytes the CPU executor allocates for `plan` (widened weights, caches,
/// arena, the search's logits); -1 if the sum overflows. CpuMemory.cpp.
int64_t cpuBytesNeeded(const Plan &plan);

} // namespace genrt
