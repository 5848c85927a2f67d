// The CPU executor: runs a plan's @prefill / @decode_step with the CPU kernel
// library and a KV cache in host memory. Float32 throughout; the reference
// the CUDA executor is compared against.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Program.h"

#include <memory>

namespace genrt {

/// Takes a loaded plan; fails if an op has no CPU kernel.
std::unique_ptr<Decoder> makeCpuDecoder(Plan plan, Status &err);

} // namespace genrt
