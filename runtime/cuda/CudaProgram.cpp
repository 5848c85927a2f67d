// A program resolved to steps at load (compileProgram: each op by its
// class to a step kind of StepKinds.h) and run (runSteps: the steps in
// order on the context's stream, with GENC_CUDA_SKIP and the per-kind
// profile of GENC_CUDA_PROFILE).
#include "runtime/cuda/StepKinds.h"

#include "runtime/plan/OpSignatures.h"
#include "runtime/cuda/Diagnostics.h"

#include <map>
#include <set>

namespace genrt::cuda {
namespace {

// What the GPU runs of a program, by the op's class in the one table of op
// signatures: GEMMs, fused kernels, the attention kernels, views (copies)
// and host-side dims; any other kind runs only inside a fused body.
OpClass classOf(const std::string &k) {
  const OpSignature *sig = findOpSignature(k);
  return sig ? sig->cls : OpClass::Kernel;
}

bool isView(const std::string &k) { return classOf(k) == OpClass::View; }

} // namespace

Status compileProgram(const Program &prog, StepContext &ctx, const KernelModule &mod,
                      const std::vector<CUdeviceptr> &weights, CompiledProgram &out) {
  ValueMap vm{prog, ctx, weights};
  // A `dims` result is host data; the GPU can only skip it where nothing but
  // a view's shape operand reads it.
  std::set<int32_t> hostOnly;
  for (const OpInfo &op : prog.ops)
    if (classOf(op.kind) == OpClass::HostShape)
      hostOnly.insert(op.results.begin(), op.results.end());
  for (const OpInfo &op : prog.ops)
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (hostOnly.count(op.operands[i]) && !(isView(op.kind) && i > 0))
        return Status::error("plan op '" + op.kind + "' at \"" + op.loc +
                             "\" reads a shape computed on the host; the CUDA executor cannot run it");
  std::map<std::string, const KernelInfo *> kernelOf;
  for (const KernelInfo &k : ctx.plan->kernels)
    kernelOf[k.name] = &k;
  // The op of the last step and that step, where it is a fused one or a GEMM.
  const OpInfo *lastFusedOp = nullptr, *lastGemmOp = nullptr;
  FusedStep *lastFused = nullptr;
  GemvStep *lastGemm = nullptr;
  for (const OpInfo &op : prog.ops) {
    std::string where = "'" + op.kind + "' at \"" + op.loc + "\" in " + prog.name;
    std::unique_ptr<Step> step;
    const OpInfo *fusedBefore = lastFusedOp, *gemmBefore = lastGemmOp;
    FusedStep *fusedStepBefore = lastFused;
    GemvStep *gemmStepBefore = lastGemm;
    const OpClass cls = classOf(op.kind);
    // A view whose result shares its source's buffer (genc's plan-memory
    // gives it one): nothing to run, and the steps around it stay neighbours.
    const bool inPlaceView = cls == OpClass::View && !op.operands.empty() && op.results.size() == 1 &&
                             vm.ptr(op.operands[0]) == vm.ptr(op.results[0]) &&
                             vm.stored(op.operands[0]) == vm.stored(op.results[0]);
    if (cls != OpClass::HostShape && !inPlaceView)
      lastFusedOp = lastGemmOp = nullptr, lastFused = nullptr, lastGemm = nullptr;
    if (cls == OpClass::HostShape || inPlaceView) {
      continue;
    } else if (cls == OpClass::Gemm) {
      std::unique_ptr<GemmStep> g;
      if (Status s = gemmStep(op, vm, mod, where, fusedBefore, fusedStepBefore, g); !s)
        return s;
      lastGemmOp = &op;
      lastGemm = g.get();
      step = std::move(g);
    } else if (cls == OpClass::Fused) {
      std::unique_ptr<FusedStep> f;
      if (Status s = fusedStep(op, vm, mod, kernelOf, where, gemmBefore, gemmStepBefore, f); !s)
        return s;
      lastFusedOp = &op;
      lastFused = f.get();
      step = std::move(f);
    } else if (cls == OpClass::CacheAttention) {
      if (Status s = attentionStep(op, vm, mod, step); !s)
        return Status::error("plan op " + where + " " + s.message());
      step->kind = "attention";
      if (ctx.tree.nccl && op.kind == "kv_attention") { // its combine with the other GPUs' shards
        step->what = where;
        out.steps.push_back(std::move(step));
        if (Status s = treeCombineStep(op, vm, mod, step); !s)
          return Status::error("plan op " + where + " " + s.message());
        step->kind = "combine";
      }
    } else if (cls == OpClass::NBitsGemm) {
      std::unique_ptr<GemvStep> g;
      if (Status s = nbitsGemmStep(op, vm, mod, where, fusedBefore, fusedStepBefore, g); !s)
        return s;
      lastGemmOp = &op;
      lastGemm = g.get();
      step = std::move(g);
    } else if (cls == OpClass::View) {
      if (Status s = copyStep(op, vm, where, step); !s)
        return s;
    } else {
      return Status::error("plan op " + where + " has no CUDA implementation in this genrun");
    }
    step->what = where;
    step->op = static_cast<int32_t>(&op - prog.ops.data());
    out.steps.push_back(std::move(step));
  }
  for (int32_t o : prog.outputs) {
    out.outputs.push_back(vm.ptr(o));
    out.outputStored.push_back(vm.stored(o));
  }
  return Status::ok();
}

namespace {
// GENC_CUDA_SKIP names a kind ("attention") or a kind in one program
// ("prefill:attention": a decode-only microbenchmark skips the prefill).
bool skipped(const StepContext &ctx, const ProgramRun &run, const std::string &kind) {
  if (ctx.skipKinds.empty())
    return false;
  static const char *const kPrograms[] = {"encode:", "prefill:", "decode:"};
  return ctx.skipKinds.count(kind) || ctx.skipKinds.count(kPrograms[static_cast<int>(run.kind)] + kind);
}
} // namespace

Status runSteps(const CompiledProgram &cp, StepContext &ctx, const ProgramRun &run) {
  if (!ctx.profile) {
    for (const auto &s : cp.steps)
      if (!skipped(ctx, run, s->kind))
        if (Status st = s->run(ctx, run); !st)
          return st;
    return Status::ok();
  }
  const DriverApi &a = *ctx.dev->api;
  std::vector<CUevent> ev(cp.steps.size() + 1);
  for (CUevent &e : ev)
    a.cuEventCreate(&e, CU_EVENT_DEFAULT);
  a.cuEventRecord(ev[0], ctx.stream);
  for (size_t i = 0; i < cp.steps.size(); ++i) {
    if (Status st = cp.steps[i]->run(ctx, run); !st)
      return st;
    a.cuEventRecord(ev[i + 1], ctx.stream);
  }
  a.cuEventSynchronize(ev.back());
  const char *prog = run.kind == ProgramKind::Decode ? "decode " : run.kind == ProgramKind::Prefill ? "prefill " : "encode ";
  for (size_t i = 0; i < cp.steps.size(); ++i) {
    float ms = 0;
    a.cuEventElapsedTime(&ms, ev[i], ev[i + 1]);
    ctx.profile->add(prog + cp.steps[i]->profileKind(ctx, run), ms);
  }
  for (CUevent &e : ev)
    a.cuEventDestroy(e);
  return Status::ok();
}

} // namespace genrt::cuda
