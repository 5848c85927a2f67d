// The GEMM steps: a matmul against a weight on cuBLASLt, or on the plan's
// GEMV kernels for a few rows where the weight lies [N, K]; a one-row GEMV
// may also run its neighbours (GemvFusion.cpp).
#include "runtime/cuda/StepKinds.h"

#include "runtime/cuda/GemvAbi.h"

#include <algorithm>

namespace genrt::cuda {
namespace {

// The GEMV kernels of a matmul, where its weight lies [N, K] and the rows
// are whole 16-byte words (else the step keeps cuBLASLt alone).
Status prepareGemv(const OpInfo &op, const KernelModule &mod, GemmStep &g) {
  std::string family = attrStr(op.attrs, "gpu_gemv", "");
  if (family.empty() || !g.shape.transB)
    return Status::ok();
  const int64_t ea = static_cast<int64_t>(dtypeSize(g.shape.a)), eb = static_cast<int64_t>(dtypeSize(g.shape.b));
  const int64_t wordA = 16 / eb * ea; // a's bytes per weight word
  if ((g.shape.K * eb) % 16 || (g.shape.K * ea) % wordA || g.a % 16 || g.b % 16)
    return Status::ok();
  const char *rows[] = {"_m1", "_m2", "_m4", "_m8"};
  for (int i = 0; i < 4; ++i)
    if (Status s = mod.function(family + rows[i], g.gemv[i]); !s)
      return s;
  // The tensor-core entries (16-bit a and w of one type; a plan from an
  // older genc has none): rounds of 32 k, 16-byte loads of a and w.
  if (g.shape.K % 32 == 0 && g.shape.a == g.shape.b && (g.shape.a == DType::F16 || g.shape.a == DType::BF16))
    for (int i = 0; i < 4; ++i)
      if (!mod.function(i ? gemvMmaWideName(family, 8 << i) : gemvMmaName(family, 16), g.mma[i]))
        g.mma[i] = nullptr;
  return Status::ok();
}

} // namespace

std::string GemmStep::profileKind(const StepContext &ctx, const ProgramRun &run) const {
  auto [withBefore, withThen] = choice(ctx, run);
  const std::string f = fusedKind(withBefore, withThen);
  const int64_t n = elementsAt(aShape, run.symbols);
  const bool tc = n > 0 && mmaEntry(ctx, n / std::max<int64_t>(1, K), withThen ? thenMma : mma) >= 0;
  return (tc ? "gemm mma" : kind) + (f.empty() ? "" : " " + f);
}

Status GemmStep::launchFused(StepContext &ctx, CUfunction fn, CUdeviceptr out, unsigned grid, GencGemvPrologue &q,
                             unsigned shared, const std::string &name) {
  GencGemvParams p{a, b, bias, out ? out : y, 1, shape.K, shape.N, 0, 0, 1};
  void *args[] = {&p, &q};
  return ctx.dev->launch(fn, grid, 1, 1, kGemvThreads, 1, shared, ctx.stream, args, name);
}

Status GemmStep::run(StepContext &ctx, const ProgramRun &run) {
  int64_t n = elementsAt(aShape, run.symbols);
  if (n < 0 || n % shape.K)
    return Status::error(what + ": the input's shape does not evaluate");
  const int64_t M = n / shape.K;
  Status s = Status::ok();
  auto [withBefore, withThen] = choice(ctx, run);
  if (const int e = mmaEntry(ctx, M, withThen ? thenMma : mma); e >= 0) {
    GencGemvParams p{a, b, bias, withThen ? thenOut : y, M, shape.K, shape.N, ctx.gemvParts, ctx.gemvTickets,
                     mmaSplitOf(e)};
    void *args[] = {&p};
    s = ctx.dev->launch(withThen ? thenMma[e] : mma[e], mmaGrid(e), 1, 1, kGemvThreads, 1, 0, ctx.stream, args,
                        "the tensor-core GEMV of " + what +
                            (withThen ? " then '" + then->kernel.info().name + "'" : ""));
  } else if (withBefore || withThen) {
    return runFused(ctx, run, withBefore, withThen);
  } else if (M >= 1 && M <= ctx.gemvRows && gemv[0]) {
    GencGemvParams p{a, b, bias, y, M, shape.K, shape.N, 0, 0, 1};
    void *args[] = {&p};
    int which = M <= 1 ? 0 : M <= 2 ? 1 : M <= 4 ? 2 : 3;
    unsigned grid = static_cast<unsigned>((shape.N + kGemvThreads / 32 - 1) / (kGemvThreads / 32));
    s = ctx.dev->launch(gemv[which], grid, 1, 1, kGemvThreads, 1, 0, ctx.stream, args, "the GEMV of " + what);
  } else if (M > 0) {
    s = ctx.gemm->run(shape, M, a, b, bias, y, ctx.stream);
    if (!s)
      s = Status::error(what + ": " + s.message());
  }
  if (s && ctx.syncEachStep)
    return ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
  return s;
}

Status gemmStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, const std::string &where,
                const OpInfo *fusedBefore, FusedStep *fusedStepBefore, std::unique_ptr<GemmStep> &out) {
  const Program &prog = vm.prog;
  StepContext &ctx = vm.ctx;
  auto g = std::make_unique<GemmStep>();
  if (op.operands.size() < 2 || !vm.isWeight(op.operands[1]))
    return Status::error("plan op " + where + ": the CUDA executor runs a matmul only against a weight");
  const Tensor &w = ctx.plan->weights[prog.values[op.operands[1]].index];
  const ValueInfo &y = prog.values[op.results.at(0)];
  if (w.rank() != 2 || y.shape.empty() || !y.shape.back().isConstant())
    return Status::error("plan op " + where + ": a 2-D weight and a constant result width are needed");
  const bool planTransB = attrInt(op.attrs, "transpose_b", 0) != 0;
  const int32_t wi = prog.values[op.operands[1]].index;
  g->shape.K = planTransB ? w.shape()[1] : w.shape()[0];
  g->shape.N = y.shape.back().constant();
  g->shape.transB = planTransB || (wi < static_cast<int32_t>(ctx.weightTransposed.size()) && ctx.weightTransposed[wi]);
  if ((planTransB ? w.shape()[0] : w.shape()[1]) != g->shape.N)
    return Status::error("plan op " + where + ": the weight does not match the result's width");
  if (!parseEpilogue(attrStr(op.attrs, "epilogue", ""), g->shape.epilogue) ||
      g->shape.epilogue.bias != (op.operands.size() == 3))
    return Status::error("plan op " + where + ": a bad epilogue");
  g->shape.a = vm.stored(op.operands[0]);
  g->shape.b = w.dtype();
  g->shape.y = vm.stored(op.results[0]);
  g->shape.bias = g->shape.epilogue.bias ? vm.stored(op.operands[2]) : DType::F32;
  g->a = vm.ptr(op.operands[0]);
  g->b = vm.ptr(op.operands[1]);
  g->bias = g->shape.epilogue.bias ? vm.ptr(op.operands[2]) : 0;
  g->y = vm.ptr(op.results[0]);
  g->aShape = prog.values[op.operands[0]].shape;
  g->K = g->shape.K;
  g->N = g->shape.N;
  g->aStored = g->shape.a;
  auto maxM = [&]() {
    int64_t n = elementsAt(g->aShape, prog.maxSymbols);
    return n > 0 ? n / std::max<int64_t>(1, g->shape.K) : 1;
  };
  if (Status s = ctx.gemm->prepare(g->shape, maxM(), g->a, g->b, g->bias, g->y); !s)
    return Status::error("plan op " + where + ": " + s.message());
  if (ctx.gemv)
    if (Status s = prepareGemv(op, mod, *g); !s)
      return Status::error("plan op " + where + ": " + s.message());
  g->oneRow = g->gemv[0] != nullptr;
  // Blocks splitting K where the product's groups leave SMs idle, with
  // parts planned for every such product (planMemory).
  if (g->hasMma()) {
    g->mmaSplit = gemvMmaSplit(g->shape.N, g->shape.K, ctx.dev->smCount, ctx.gemvMmaSplit);
    g->mmaSplitWide = gemvMmaSplit(g->shape.N, g->shape.K, ctx.dev->smCount, ctx.gemvMmaSplit, kGemvMmaWideOutputs);
  }
  if (ctx.gemv && fusedBefore)
    if (Status s = prepareBefore(vm, op, *fusedBefore, *fusedStepBefore, mod, *ctx.dev, *g); !s)
      return Status::error("plan op " + where + ": " + s.message());
  g->kind = "gemm";
  out = std::move(g);
  return Status::ok();
}

} // namespace genrt::cuda
