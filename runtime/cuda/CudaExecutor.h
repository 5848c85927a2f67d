// The CUDA executor: runs a plan's programs on an NVIDIA GPU through the
// driver API (opened at run time) and cuBLASLt, with the plan's generated
// kernels. Built only where the CUDA headers are; elsewhere probeCuda says so.
#pragma once
#include "runtime/Executor.h"

#include <memory>

namespace genrt {

/// Ok when a GPU is usable here; else why not (no driver, no device, ...).
Status probeCuda();

std::unique_ptr<Executor> makeCudaExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                           Status &err);

} // namespace genrt
