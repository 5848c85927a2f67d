// GEMV fusion (docs/cuda.md): a one-row GEMV — the float one (GemmStep)
// or the 4/8-bit one (NBitsSteps.cpp) — that also runs the fused row kernel
// before it and/or the elementwise GLU after it, where the plan has those
// entries and no buffers they touch overlap. The neighbours' steps then
// skip their own launches (FusedStep::absorbed).
#include "runtime/cuda/StepKinds.h"

#include "runtime/cuda/NBitsAbi.h"

#include <algorithm>

namespace genrt::cuda {
namespace {

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

} // namespace

// The matmul `op` reads result r of the fused op `prev`, whose step comes
// right before, and nothing else reads it: where the plan has the GEMV entry
// that runs that body first, `g` takes it. Every block of it reads the
// body's operands while others write the product (and block 0 the body's
// other results), so none of those may share bytes (genc's plan-memory
// keeps them apart; an older plan may not). Its shared row must hold K
// elements of a (a plan names its kernels; it is not trusted to size them).
Status prepareBefore(const ValueMap &vm, const OpInfo &op, const OpInfo &prev, FusedStep &f, const KernelModule &mod,
                     const Device &dev, GemvStep &g) {
  const Program &prog = vm.prog;
  if (!g.oneRow || g.K * static_cast<int64_t>(dtypeSize(g.aStored)) > kGemvPrologueBytes)
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
      (op.operands.size() > 2 && !vm.isWeight(op.operands[2]))) // a bias (or a 4/8-bit product's scales)
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
  const int64_t rowBytes = (g.K * static_cast<int64_t>(dtypeSize(g.aStored)) + 15) / 16 * 16;
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

std::pair<bool, bool> GemvStep::choice(const StepContext &ctx, const ProgramRun &run) const {
  if (!ctx.gemvFusion || (!before && !then))
    return {false, false};
  if (const int64_t n = elementsAt(aShape, run.symbols); n != K) { // rows on the tensor cores
    const bool glu = then && (ctx.gemvFusion & 2) && n > 0 && n % K == 0 && mmaEntry(ctx, n / K, thenMma) >= 0;
    return {false, glu};
  }
  if (!oneRow)
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

Status GemvStep::runFused(StepContext &ctx, const ProgramRun &run, bool withBefore, bool withThen) {
  const bool bf = withBefore, t = withThen;
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
  static_assert(kGemvThreads == kNBitsThreads, "both families' one-row entries run a warp an output, 8 a block");
  const int64_t outputs = t ? N / 2 : N;
  const unsigned grid = static_cast<unsigned>((outputs + kGemvThreads / 32 - 1) / (kGemvThreads / 32));
  Status s = launchFused(ctx, fused[bf][t], t ? thenOut : 0, grid, q, static_cast<unsigned>(shared), name);
  if (s && ctx.syncEachStep)
    return ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
  return s;
}

std::string GemvStep::fusedKind(bool withBefore, bool withThen) {
  return withBefore && withThen ? "between fused" : withBefore ? "after fused" : withThen ? "then fused" : "";
}

// The elementwise fused op `op` reads only the product of `mm`, whose step
// comes right before, and nothing else reads that product: where the plan
// has the GEMV entries that end in this body (a GLU), `g` takes them. The
// body's result must not share bytes with what the GEMV's blocks read (its
// a, or the body before and its results where it runs that too).
Status prepareThen(const ValueMap &vm, const OpInfo &mm, const OpInfo &op, FusedStep &f, const KernelModule &mod,
                   GemvStep &g) {
  const Program &prog = vm.prog;
  const int32_t y = mm.results.at(0);
  if ((!g.oneRow && !g.hasMma()) || g.N % 2 || op.operands.size() != 1 || op.operands[0] != y || op.results.size() != 1 ||
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
      os.back().constant() * 2 != g.N || k.outputDTypes.size() != 1 || vm.stored(out) != k.outputDTypes[0] ||
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
  if (g.oneRow && mod.function(gemvEntryName(fam, "", 0, k.name), fn))
    g.fused[0][1] = fn;
  if (g.hasMma()) {
    const std::string glu = gemvEntryName(fam, "", 0, k.name);
    for (int i = 0; i < 4; ++i)
      if (mod.function(i ? gemvMmaWideName(glu, 8 << i) : gemvMmaName(glu, 16), fn))
        g.thenMma[i] = fn;
  }
  if (g.before && g.oneRow) {
    const KernelInfo &kb = g.before->kernel.info();
    const size_t r = std::find(g.beforeOp->results.begin(), g.beforeOp->results.end(), mm.operands[0]) -
                     g.beforeOp->results.begin();
    if (mod.function(gemvEntryName(fam, kb.name, r, k.name), fn))
      g.fused[1][1] = fn;
  }
  if (!g.fused[0][1] && !g.fused[1][1] && !g.thenMma[0] && !g.thenMma[1] && !g.thenMma[2] && !g.thenMma[3])
    return Status::ok(); // a plan from a genc without these entries
  g.then = &f;
  g.thenOut = vm.ptr(out);
  f.absorbedBy = &g;
  f.isBefore = false;
  return Status::ok();
}

} // namespace genrt::cuda
