// Runs the body of a `fused` op (Plan::functions) on the CPU: the group's ops
// one by one with the shared kernels, so fusion keeps the exact semantics.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/cpu/OpLibrary.h"

namespace genrt::cpu {

/// `weights` are the executor's (widened) weights, indexed like Plan::weights.
Error runFusedBody(const Program &body, const std::vector<Tensor> &weights, KernelContext &ctx,
                   const std::vector<Tensor> &ins, std::vector<Tensor> &outs);

} // namespace genrt::cpu
