// The step of `matmul_nbits` (4/8-bit block-quantized weights,
// runtime/plan/NBitsLayout.h) on the plan's generated kernels (NBitsAbi.h): the
// GEMV entries for up to 3 rows (GENC_CUDA_NBITS_GEMV_ROWS, CudaOptions.h says
// why), 8 where the family has no tensor-core entries; up to
// GENC_CUDA_NBITS_ROWS (default 64) the tensor-core entries where the family
// has them, else the 8-row GEMV in chunks of 8 up to 32 rows; for more, the tensor-core tiles where the family
// has them, else the tiled kernel on the CUDA cores. One row may also run the
// fused row body before it and the GLU after it (GemvFusion.cpp). The weights
// stay as the plan stores them (codes, scales, zero points; WeightUpload.cpp
// copies them unchanged).
#include "runtime/cuda/StepKinds.h"

#include "runtime/plan/NBitsLayout.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/NBitsAbi.h"

namespace genrt::cuda {
namespace {

class NBitsGemmStep final : public GemvStep {
public:
  GencNBitsParams params{};
  CUfunction gemv[4] = {}; // rows <= 1, 2, 4, 8
  CUfunction tiles = nullptr;
  CUfunction mma[3] = {}; // rows <= 16, 32, 64; null where the family has none
  CUfunction mmaTiles = nullptr; // any rows, in 64 x 64 tiles; null alike

  Status run(StepContext &ctx, const ProgramRun &run) override {
    const int64_t n = elementsAt(aShape, run.symbols);
    if (n < 0 || n % params.K)
      return Status::error(what + ": the input's shape does not evaluate");
    GencNBitsParams p = params;
    p.M = n / params.K;
    if (p.M == 0)
      return Status::ok();
    if (auto [withBefore, withThen] = choice(ctx, run); withBefore || withThen)
      return runFused(ctx, run, withBefore, withThen);
    void *args[] = {&p};
    Status s = Status::ok();
    const Entry e = entry(p.M, ctx);
    if (e == Entry::Mma) {
      const int which = p.M <= 16 ? 0 : p.M <= 32 ? 1 : 2;
      const unsigned grid = static_cast<unsigned>((p.N + kNBitsMmaColumns - 1) / kNBitsMmaColumns * p.split);
      s = ctx.dev->launch(mma[which], grid, 1, 1, kNBitsThreads, 1, 0, ctx.stream, args,
                          "the 4/8-bit tensor-core product of " + what);
    } else if (e == Entry::Gemv) {
      const int which = p.M <= 1 ? 0 : p.M <= 2 ? 1 : p.M <= 4 ? 2 : 3;
      const unsigned grid = static_cast<unsigned>((p.N + kNBitsThreads / 32 - 1) / (kNBitsThreads / 32));
      const unsigned chunks = static_cast<unsigned>((p.M + kNBitsGemvRows - 1) / kNBitsGemvRows);
      s = ctx.dev->launch(gemv[which], grid, chunks, 1, kNBitsThreads, 1, 0, ctx.stream, args,
                          "the 4/8-bit GEMV of " + what);
    } else {
      const int64_t gy = (p.M + kNBitsTile - 1) / kNBitsTile;
      if (gy > 65535)
        return Status::error(what + ": " + std::to_string(p.M) + " rows are more than the tiled kernel's grid holds");
      s = ctx.dev->launch(mmaTiles ? mmaTiles : tiles, static_cast<unsigned>((p.N + kNBitsTile - 1) / kNBitsTile), static_cast<unsigned>(gy),
                          1, kNBitsThreads, 1, 0, ctx.stream, args, "the 4/8-bit tiles of " + what);
    }
    if (s && ctx.syncEachStep)
      return ctx.dev->check(ctx.dev->api->cuStreamSynchronize(ctx.stream), what.c_str());
    return s;
  }
  std::string profileKind(const StepContext &ctx, const ProgramRun &run) const override {
    if (auto [withBefore, withThen] = choice(ctx, run); withBefore || withThen)
      return "gemm nbits " + fusedKind(withBefore, withThen);
    const int64_t n = elementsAt(aShape, run.symbols);
    const Entry e = entry(n > 0 ? n / params.K : 0, ctx);
    return e == Entry::Mma   ? "gemm nbits mma"
           : e == Entry::Gemv ? "gemm nbits gemv"
           : mmaTiles         ? "gemm nbits mma tiles"
                              : "gemm nbits tiles";
  }

protected:
  Status launchFused(StepContext &ctx, CUfunction fn, CUdeviceptr out, unsigned grid, GencGemvPrologue &q,
                     unsigned shared, const std::string &name) override {
    GencNBitsParams p = params;
    p.M = 1;
    if (out)
      p.y = out;
    void *args[] = {&p, &q};
    return ctx.dev->launch(fn, grid, 1, 1, kNBitsThreads, 1, shared, ctx.stream, args, name);
  }

private:
  enum class Entry { Gemv, Mma, Tiles };
  Entry entry(int64_t M, const StepContext &ctx) const {
    if (M <= ctx.nbitsGemvRows && M <= ctx.nbitsCoreRows)
      return Entry::Gemv;
    if (M <= ctx.nbitsGemvRows && mma[0] && M <= kNBitsMmaRows)
      return Entry::Mma;
    if (M <= ctx.nbitsGemvRows && M <= kNBitsGemvChunkRows)
      return Entry::Gemv;
    return Entry::Tiles;
  }
};

} // namespace

Status nbitsGemmStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, const std::string &where,
                     const OpInfo *fusedBefore, FusedStep *fusedStepBefore, std::unique_ptr<GemvStep> &out) {
  const Program &prog = vm.prog;
  auto bad = [&](const std::string &why) { return Status::error("plan op " + where + ": " + why); };
  if (op.operands.size() < 3 || op.operands.size() > 4 || op.results.size() != 1)
    return bad("matmul_nbits takes a, b, scales and optional zero points");
  for (size_t i = 1; i < op.operands.size(); ++i)
    if (!vm.isWeight(op.operands[i]))
      return bad("operand " + std::to_string(i) + " is not a weight");
  const Shape &as = prog.values[op.operands[0]].shape;
  if (as.empty() || !as.back().isConstant())
    return bad("a has no constant last dim K");
  NBitsShape s{attrInt(op.attrs, "bits", 0), attrInt(op.attrs, "block_size", 0), as.back().constant(),
               attrInt(op.attrs, "n", 0)};
  if (std::string why = checkNBitsShape(s); !why.empty())
    return bad(why);
  // The tensors as uploaded (the verifier checked the plan's value types;
  // the kernels index these bytes by the same facts).
  auto weight = [&](size_t i) -> const Tensor & { return vm.ctx.plan->weights[prog.values[op.operands[i]].index]; };
  const bool zp = op.operands.size() == 4;
  ZeroPointKind kind;
  if (std::string why = checkNBitsOperands(s, weight(1).dtype(), weight(1).shape(), weight(2).dtype(), weight(2).shape(),
                                           zp, zp ? weight(3).dtype() : DType::U8,
                                           zp ? weight(3).shape() : std::vector<int64_t>{}, kind);
      !why.empty())
    return bad(why);
  const DType a = vm.stored(op.operands[0]), y = vm.stored(op.results[0]);
  auto isFloat = [](DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; };
  if (!isFloat(a) || !isFloat(y))
    return bad("a and the result must be stored as f32, f16 or bf16");
  const Shape &ys = prog.values[op.results[0]].shape;
  if (ys.empty() || !ys.back().isConstant() || ys.back().constant() != s.N)
    return bad("the result's last dim is not n = " + std::to_string(s.N));
  const std::string family = attrStr(op.attrs, "gpu_gemv", "");
  if (family.empty())
    return bad("the plan has no GPU kernels for it (compiled by a genc without them; compile it again)");
  auto step = std::make_unique<NBitsGemmStep>();
  const char *rows[] = {"_m1", "_m2", "_m4", "_m8"};
  for (int i = 0; i < 4; ++i)
    if (Status st = mod.function(family + rows[i], step->gemv[i]); !st)
      return bad(st.message());
  if (Status st = mod.function(family + "_tiles", step->tiles); !st)
    return bad(st.message());
  if (attrInt(op.attrs, "gpu_gemv_mma", 0) != 0) {
    const char *mmaRows[] = {"_mma1", "_mma2", "_mma4"};
    for (int i = 0; i < 3; ++i)
      if (Status st = mod.function(family + mmaRows[i], step->mma[i]); !st)
        return bad(st.message());
    if (Status st = mod.function(family + "_mma_tiles", step->mmaTiles); !st)
      return bad(st.message());
  }
  // The tensor-core entries' blocks split K where the product's groups of
  // 64 columns leave SMs idle (planMemory sized the parts for it).
  const int split = step->mma[0] ? gemvMmaSplit(s.N, s.K, vm.ctx.dev->smCount, vm.ctx.gemvMmaSplit, kNBitsMmaColumns) : 1;
  step->params = GencNBitsParams{vm.ptr(op.operands[0]),
                                 vm.ptr(op.operands[1]),
                                 vm.ptr(op.operands[2]),
                                 zp ? vm.ptr(op.operands[3]) : 0,
                                 vm.ptr(op.results[0]),
                                 0,
                                 s.K,
                                 s.N,
                                 vm.ctx.gemvParts,
                                 vm.ctx.gemvTickets,
                                 split};
  step->aShape = as;
  step->K = s.K;
  step->N = s.N;
  step->aStored = a;
  step->oneRow = true;
  if (fusedBefore)
    if (Status st = prepareBefore(vm, op, *fusedBefore, *fusedStepBefore, mod, *vm.ctx.dev, *step); !st)
      return bad(st.message());
  step->kind = "gemm";
  out = std::move(step);
  return Status::ok();
}

} // namespace genrt::cuda
