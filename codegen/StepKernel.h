// The step kernel: @decode_step as one persistent kernel (`genc_step`, the
// contract in runtime/cuda/StepAbi.h) that runs the work items of the plan's
// schedule (passes/ScheduleStep.cpp, runtime/plan/StepSchedule.h). It is
// generated per plan into the plan's module, after the attention code whose
// decode and merge routines its attention items call.
//
// Each distinct routine (a matrix-vector product with its storage types,
// epilogue, prologue row body and GLU; a fused row body; an attention
// family's decode or merge) becomes one case of the kernel's dispatch; the
// schedule's ops are given their case (`code`) here. Where an op has no
// routine the kernel can run (a weight that is not 16-bit, a GLU body with
// no expression, a row body wider than the kernel's shared memory) the
// schedule is dropped and the step runs kernel by kernel.
#pragma once
#include "codegen/CudaEmitter.h"
#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace genc {

struct StepKernel {
  std::string code;               // the kernel and its routines (after the attention code)
  std::vector<std::string> names; // "genc_step", or none
  std::string dropped;            // why the schedule was dropped ("": kept or none)
};

/// The step kernel of `m`'s schedule (metadata "step.schedule"), whose ops
/// it gives their routine's case and whose shared-memory size it sets (the
/// metadata is rewritten); none where there is no schedule.
StepKernel emitStepKernel(Module &m, DType activation, const std::vector<CudaKernel> &kernels);

} // namespace genc
