// The step kernel's host side (runtime/cuda/StepAbi.h): at load, the plan's
// schedule (runtime/plan/StepSchedule.h) turned into the kernel's tables on the
// device — an op record a step op (its weight rows, buffers, the attention
// op's decode parameters, as the kernel-per-op steps of @decode_step hold
// them), the items, the blocks' lists, the counters; then a decode step it
// takes is one launch instead of the program's steps, inside the same CUDA
// graph. After the step, a wait that timed out in the kernel comes back as
// an error naming the item's op.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/cuda/CudaSteps.h"
#include "runtime/cuda/StepAbi.h"

#include <string>
#include <vector>

namespace genrt::cuda {

class StepRunner {
public:
  StepRunner() = default;
  StepRunner(const StepRunner &) = delete;
  StepRunner &operator=(const StepRunner &) = delete;
  ~StepRunner();

  /// Sets up the kernel for `plan`'s schedule over @decode_step's compiled
  /// steps. Not an error where it cannot run here (no schedule, a GPU older
  /// than sm_90, fewer SMs than its blocks, a weight not laid out [N, K],
  /// GENC_CUDA_STEP=0): ready() is then false and why() says why.
  Status init(StepContext &ctx, const KernelModule &mod, const Program &decode, const CompiledProgram &compiled,
              const std::vector<CUdeviceptr> &weights, int mode, int trace = 0, int stallOp = -1);
  bool ready() const { return fn_ != nullptr; }
  const std::string &why() const { return why_; }
  /// Whether the kernel runs this run (a decode step of at most maxRows rows).
  bool takes(const ProgramRun &run) const;
  /// Enqueues the step: its arguments, the kernel, its error record back.
  Status enqueue(StepContext &ctx, const ProgramRun &run);
  /// After the stream's wait, each step the kernel took (a graph's replay
  /// too): counts it; the kernel's error, naming the item's op; with stamps
  /// on (init's trace), after the 8th, where its time went by op kind (and
  /// op by op at trace 2), to stderr.
  Status finish();
  int64_t steps() const { return steps_; }

private:
  Status check() const;
  void printTrace();
  Status build(StepContext &ctx, const Program &decode, const CompiledProgram &compiled,
               const std::vector<CUdeviceptr> &weights, std::vector<GencStepOp> &ops, std::string &why);

  const Device *dev_ = nullptr;
  const StepSchedule *sched_ = nullptr;
  CUfunction fn_ = nullptr;
  std::string why_;
  std::vector<CUdeviceptr> alloc_;
  CUdeviceptr ops_ = 0, items_ = 0, order_ = 0, tasks_ = 0, starts_ = 0, counters_ = 0, done_ = 0, args_ = 0, error_ = 0;
  GencStepArgs *argsHost_ = nullptr;
  GencStepError *errorHost_ = nullptr;
  CUdeviceptr trace_ = 0;
  int traceLevel_ = 0; // GENC_CUDA_STEP_TRACE: 1 by op kind, 2 also op by op
  int stallOp_ = -1;
  int64_t splits_ = 1; // the attention ops' splits at one token (all layers share the length)
  int64_t steps_ = 0;
};

} // namespace genrt::cuda
