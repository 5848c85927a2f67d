// The GEMM steps: a matmul against a weight on cuBLASLt, or on the plan's
// GEMV kernels for a few rows where the weight lies [N, K]; a one-row GEMV
// may also run the fused row kernel before it and the elementwise GLU after
// it itself ("GEMV fusion", docs/cuda.md), where the plan has those entries
// and no buffers they touch overlap.
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
  return Status::ok();
}

// Whether a buffer `w` writes meets one `r` reads or writes (device
// ranges at the program's maximum shapes; an unsized one meets everything).
bool overlaps(const ValueMap &vm, int32_t w, int32_t r) {
  auto range = [&](int32_t v) {
    const int64_t n = elementsAt(vm.prog.values[v].shape, vm.prog.maxSymbols);
    const CUdeviceptr at = vm.ptr(v);
    return std::make_pair(at, n < 0 ? ~CUdeviceptr(0) : at + static_cast<CUdeviceptr>(n) * dtypeSize(vm.stored(v)));
  };
  auto [a0, a1] = range(w);
  auto [b0, b1] = range(r);
  return a0 < b1 && b0 < a1;
}

// The matmul `op` reads result r of the fused op `prev`, whose step comes
// right before, and nothing else reads it: where the plan has the GEMV entry
// that runs that body first, `g` takes it. Every block of it reads the
// body's operands while others write the product (and block 0 the body's
// other results), so none of those may share bytes (genc's plan-memory
// keeps them apart; an older plan may not). Its shared row must hold K
// elements of a (a plan names its kernels; it is not trusted to size them).
Status prepareAfter(const ValueMap &vm, const OpInfo &op, const OpInfo &prev, FusedStep &f, const KernelModule &mod,
                    const Device &dev, GemmStep &g) {
  const Program &prog = vm.prog;
  if (!g.gemv[0] || g.shape.K * static_cast<int64_t>(dtypeSize(g.shape.a)) > kGemvPrologueBytes)
    return Status::ok();
  const int32_t a = op.operands[0];
  auto r = std::find(prev.results.begin(), prev.results.end(), a);
  if (r == prev.results.end() || std::count(prog.outputs.begin(), prog.outputs.end(), a))
    return Status::ok();
  size_t uses = 0;
  for (const OpInfo &o : prog.ops)
    uses += std::count(o.operands.begin(), o.operands.end(), a);
  const KernelInfo &k = f.kernel.info();
  if (uses != 1 || k.mode != "rows" || k.blockSize > kGemvThreads || k.symbols.size() > kGemvPrologueSymbols ||
      f.pointers.size() > kGemvProloguePointers ||
      f.pointers.size() != static_cast<size_t>(k.numInputs + k.numOutputs) ||
      (op.operands.size() > 2 && !vm.isWeight(op.operands[2])))
    return Status::ok();
  std::vector<int32_t> writes{op.results.at(0)};
  for (int32_t v : prev.results)
    if (v != a)
      writes.push_back(v);
  for (size_t i = 0; i < writes.size(); ++i) {
    for (int32_t v : prev.operands)
      if (!vm.isWeight(v) && overlaps(vm, writes[i], v))
        return Status::ok();
    for (size_t j = i + 1; j < writes.size(); ++j)
      if (overlaps(vm, writes[i], writes[j]))
        return Status::ok();
  }
  const std::string name = gemvEntryName(attrStr(op.attrs, "gpu_gemv", ""), k.name, r - prev.results.begin(), "");
  CUfunction fn = nullptr;
  if (!mod.function(name, fn))
    return Status::ok(); // a plan from a genc without these entries
  int staticBytes = 0;
  if (Status s = dev.check(dev.api->cuFuncGetAttribute(&staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), name.c_str());
      !s)
    return s;
  // The staged row (16-byte aligned) and the row function's 32 floats.
  const int64_t rowBytes = (g.shape.K * static_cast<int64_t>(dtypeSize(g.shape.a)) + 15) / 16 * 16;
  if (staticBytes < rowBytes + 128)
    return Status::error("kernel '" + name + "' holds " + std::to_string(staticBytes) +
                         " bytes of shared memory, not the matmul's row of " + std::to_string(rowBytes) +
                         " and 128 more: the plan's kernels do not match its ops");
  g.staticShared = staticBytes;
  g.fused[1][0] = fn;
  g.before = &f;
  g.beforeOp = &prev;
  f.absorbedBy = &g;
  f.isBefore = true;
  return Status::ok();
}

} // namespace

std::pair<bool, bool> GemmStep::choice(const StepContext &ctx, const ProgramRun &run) const {
  if (!ctx.gemvFusion || !gemv[0] || (!before && !then) || elementsAt(aShape, run.symbols) != shape.K)
    return {false, false};
  bool withBefore = before && (ctx.gemvFusion & 1), withThen = then && (ctx.gemvFusion & 2);
  if (withBefore) {
    for (const Shape &r : before->results)
      if (r.empty() || !r.back().isConstant() || elementsAt(r, run.symbols) != r.back().constant())
        withBefore = false;
    // The body's dynamic shared memory beside the staged row, within
    // what a launch gets without opting in.
    auto shared = before->kernel.info().sharedFloats.evaluate(run.symbols);
    withBefore = withBefore && shared && *shared >= 0 && staticShared + *shared * 4 <= kGemvSharedLimit;
  }
  if (!fused[withBefore][withThen]) { // an entry for one of the two (older plans, or a body that did not fit)
    if (withBefore && fused[1][0])
      withThen = false;
    else if (withThen && fused[0][1])
      withBefore = false;
  }
  return fused[withBefore][withThen] ? std::make_pair(withBefore, withThen) : std::make_pair(false, false);
}

std::string GemmStep::profileKind(const StepContext &ctx, const ProgramRun &run) const {
  auto [withBefore, withThen] = choice(ctx, run);
  return withBefore && withThen ? "gemm between fused"
         : withBefore           ? "gemm after fused"
         : withThen             ? "gemm then fused"
                                : kind;
}

Status GemmStep::runFused(StepContext &ctx, const ProgramRun &run, bool withBefore, bool withThen) {
  const bool bf = withBefore, t = withThen;
  GencGemvParams p{a, b, bias, t ? thenOut : y, 1, shape.K, shape.N};
  GencGemvPrologue q{};
  int64_t shared = 0;
  std::string name = "the GEMV of " + what;
  if (bf) {
    const KernelInfo &k = before->kernel.info();
    for (size_t i = 0; i < k.symbols.size(); ++i) {
      auto it = run.symbols.find(k.symbols[i]);
      if (it == run.symbols.end())
        return Status::error(what + ": kernel '" + k.name + "' needs the symbol '" + k.symbols[i] + "'");
      q.sym[i] = it->second;
    }
    for (size_t i = 0; i < before->pointers.size(); ++i)
      q.ptr[i] = before->pointers[i];
    shared = *k.sharedFloats.evaluate(run.symbols) * 4;
    name += " after '" + k.name + "'";
  }
  if (t)
    name += " then '" + then->kernel.info().name + "'";
  void *args[] = {&p, &q};
  const int64_t outputs = t ? shape.N / 2 : shape.N;
  const unsigned grid = static_cast<unsigned>((outputs + kGemvThreads / 32 - 1) / (kGemvThreads / 32));
  return ctx.dev->launch(fused[bf][t], grid, 1, 1, kGemvThreads, 1, static_cast<unsigned>(shared), ctx.stream,
                         args, name);
}

Status GemmStep::run(StepContext &ctx, const ProgramRun &run) {
  int64_t n = elementsAt(aShape, run.symbols);
  if (n < 0 || n % shape.K)
    return Status::error(what + ": the input's shape does not evaluate");
  const int64_t M = n / shape.K;
  Status s = Status::ok();
  if (auto [withBefore, withThen] = choice(ctx, run); withBefore || withThen) {
    s = runFused(ctx, run, withBefore, withThen);
  } else if (M >= 1 && M <= ctx.gemvRows && gemv[0]) {
    GencGemvParams p{a, b, bias, y, M, shape.K, shape.N};
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

// The elementwise fused op `op` reads only the product of `mm`, whose step
// comes right before, and nothing else reads that product: where the plan
// has the GEMV entries that end in this body (a GLU), `g` takes them. The
// body's result must not share bytes with what the GEMV's blocks read (its
// a, or the body before and its results where it runs that too).
Status prepareThen(const ValueMap &vm, const OpInfo &mm, const OpInfo &op, FusedStep &f, const KernelModule &mod,
                   GemmStep &g) {
  const Program &prog = vm.prog;
  const int32_t y = mm.results.at(0);
  if (!g.gemv[0] || g.shape.N % 2 || op.operands.size() != 1 || op.operands[0] != y || op.results.size() != 1 ||
      std::count(prog.outputs.begin(), prog.outputs.end(), y))
    return Status::ok();
  size_t uses = 0;
  for (const OpInfo &o : prog.ops)
    uses += std::count(o.operands.begin(), o.operands.end(), y);
  const KernelInfo &k = f.kernel.info();
  const int32_t out = op.results[0];
  // The GEMV writes N / 2 elements a row to the body's result, in its dtype.
  const Shape &os = prog.values[out].shape;
  if (uses != 1 || k.mode != "elementwise" || os.empty() || !os.back().isConstant() ||
      os.back().constant() * 2 != g.shape.N || k.outputDTypes.size() != 1 || vm.stored(out) != k.outputDTypes[0] ||
      (mm.operands.size() > 2 && !vm.isWeight(mm.operands[2])))
    return Status::ok();
  std::vector<int32_t> reads{mm.operands[0]};
  if (g.before) {
    reads.insert(reads.end(), g.beforeOp->operands.begin(), g.beforeOp->operands.end());
    reads.insert(reads.end(), g.beforeOp->results.begin(), g.beforeOp->results.end());
  }
  for (int32_t v : reads)
    if (!vm.isWeight(v) && overlaps(vm, out, v))
      return Status::ok();
  const std::string fam = attrStr(mm.attrs, "gpu_gemv", "");
  CUfunction fn = nullptr;
  if (mod.function(gemvEntryName(fam, "", 0, k.name), fn))
    g.fused[0][1] = fn;
  if (g.before) {
    const KernelInfo &kb = g.before->kernel.info();
    const size_t r = std::find(g.beforeOp->results.begin(), g.beforeOp->results.end(), mm.operands[0]) -
                     g.beforeOp->results.begin();
    if (mod.function(gemvEntryName(fam, kb.name, r, k.name), fn))
      g.fused[1][1] = fn;
  }
  if (!g.fused[0][1] && !g.fused[1][1])
    return Status::ok(); // a plan from a genc without these entries
  g.then = &f;
  g.thenOut = vm.ptr(out);
  f.absorbedBy = &g;
  f.isBefore = false;
  return Status::ok();
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
  auto maxM = [&]() {
    int64_t n = elementsAt(g->aShape, prog.maxSymbols);
    return n > 0 ? n / std::max<int64_t>(1, g->shape.K) : 1;
  };
  if (Status s = ctx.gemm->prepare(g->shape, maxM(), g->a, g->b, g->bias, g->y); !s)
    return Status::error("plan op " + where + ": " + s.message());
  if (ctx.gemv)
    if (Status s = prepareGemv(op, mod, *g); !s)
      return Status::error("plan op " + where + ": " + s.message());
  if (ctx.gemv && fusedBefore)
    if (Status s = prepareAfter(vm, op, *fusedBefore, *fusedStepBefore, mod, *ctx.dev, *g); !s)
      return Status::error("plan op " + where + ": " + s.message());
  g->kind = "gemm";
  out = std::move(g);
  return Status::ok();
}

} // namespace genrt::cuda
