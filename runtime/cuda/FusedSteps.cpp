// The fused steps: a fused group's generated kernel (codegen/CudaEmitter.h),
// launched with its symbols and pointers, unless a neighbouring one-row
// GEMV runs its body itself (GemmSteps.cpp).
#include "runtime/cuda/StepKinds.h"

namespace genrt::cuda {

bool FusedStep::absorbed(const StepContext &ctx, const ProgramRun &run) const {
  if (!absorbedBy)
    return false;
  auto [b, t] = absorbedBy->choice(ctx, run);
  return isBefore ? b : t;
}

std::string FusedStep::profileKind(const StepContext &ctx, const ProgramRun &run) const {
  return absorbed(ctx, run) ? "fused (run by a gemm)" : kind;
}

Status FusedStep::run(StepContext &ctx, const ProgramRun &run) {
  if (absorbed(ctx, run))
    return Status::ok();
  Status s = kernel.launch(*ctx.dev, run.symbols, pointers, ctx.stream);
  if (s && ctx.syncEachStep)
    s = ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
  return s;
}

Status fusedStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod,
                 const std::map<std::string, const KernelInfo *> &kernelOf, const std::string &where,
                 const OpInfo *gemmBefore, GemvStep *gemmStepBefore, std::unique_ptr<FusedStep> &out) {
  const Program &prog = vm.prog;
  StepContext &ctx = vm.ctx;
  auto f = std::make_unique<FusedStep>();
  std::string body = attrStr(op.attrs, "body", "");
  auto it = kernelOf.find(body);
  if (it == kernelOf.end())
    return Status::error("plan op " + where + ": fused body '" + body + "' has no GPU kernel");
  if (Status s = f->kernel.prepare(*ctx.dev, mod, *it->second); !s)
    return s;
  for (int32_t v : op.operands)
    f->pointers.push_back(vm.ptr(v));
  for (int32_t v : op.results) {
    f->pointers.push_back(vm.ptr(v));
    f->results.push_back(prog.values[v].shape);
  }
  f->kind = "fused";
  if (gemmBefore) // a GEMV step has its one-row entries or declines (GemvStep::oneRow)
    if (Status s = prepareThen(vm, *gemmBefore, op, *f, mod, *gemmStepBefore); !s)
      return Status::error("plan op " + where + ": " + s.message());
  out = std::move(f);
  return Status::ok();
}

} // namespace genrt::cuda
