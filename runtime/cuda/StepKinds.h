// What the step kinds of a compiled program share (CudaSteps.h): where a
// program's values live on the device, the GEMM and fused steps (a one-row
// GEMV may run the fused kernel before or after it itself, so each names the
// other), and the builders that CudaProgram.cpp calls for each op. Used only
// by the step files (GemmSteps.cpp, GemvFusion.cpp, FusedSteps.cpp,
// AttentionSteps.cpp, CopySteps.cpp, NBitsSteps.cpp) and CudaProgram.cpp.
#pragma once
#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/CudaSteps.h"
#include "runtime/cuda/GemvAbi.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace genrt::cuda {

/// Elements of `shape` at `symbols`; -1 where it does not evaluate.
inline int64_t elementsAt(const Shape &shape, const std::map<std::string, int64_t> &symbols) {
  int64_t n = 1;
  for (const Dim &d : shape) {
    auto v = d.evaluate(symbols);
    if (!v || *v < 0)
      return -1;
    n *= *v;
  }
  return n;
}

// Where each value of a program lives on the device, and how it is stored.
struct ValueMap {
  const Program &prog;
  StepContext &ctx;
  const std::vector<CUdeviceptr> &weights;
  CUdeviceptr ptr(int32_t v) const {
    const ValueInfo &vi = prog.values[v];
    switch (vi.storage) {
    case Storage::Weight: return weights[vi.index];
    case Storage::Arena: return ctx.arena + vi.offset;
    case Storage::Argument: return ctx.arguments[prog.argumentNames[vi.index]];
    default: return 0;
    }
  }
  DType stored(int32_t v) const {
    const ValueInfo &vi = prog.values[v];
    return vi.storage == Storage::Weight ? ctx.plan->weights[vi.index].dtype() : vi.stored;
  }
  bool isWeight(int32_t v) const { return prog.values[v].storage == Storage::Weight; }
};

class GemvStep;

// A fused group: its generated kernel — or nothing, where the matmul right
// after it runs its row itself, or the one before ends in it (GemvStep::choice).
class FusedStep final : public Step {
public:
  FusedLaunch kernel;
  std::vector<CUdeviceptr> pointers;
  std::vector<Shape> results;
  /// The GEMV step that may run this one's work: the matmul right after
  /// (this is its `before`) or right before (its `then`).
  const GemvStep *absorbedBy = nullptr;
  bool isBefore = false;
  bool absorbed(const StepContext &ctx, const ProgramRun &run) const;
  Status run(StepContext &ctx, const ProgramRun &run) override;
  std::string profileKind(const StepContext &ctx, const ProgramRun &run) const override;
};

// A product whose one-row GEMV may run its neighbours itself ("GEMV fusion",
// GemvFusion.cpp): the fused row body before it (whose result is its a) and
// the elementwise GLU after it (over its product, into `thenOut`). The float
// GEMV (GemmStep) and the 4/8-bit one (NBitsSteps.cpp) are such products;
// each launches its own entries (launchFused).
class GemvStep : public Step {
public:
  int64_t K = 0, N = 0;       // a's row; the product's width (the weight's rows)
  DType aStored = DType::F32; // a's storage
  Shape aShape;
  bool oneRow = false;        // the step has a one-row GEMV
  /// One-row entries that also run the step before and/or after:
  /// fused[before][then] (GemvAbi.h's names).
  CUfunction fused[2][2] = {};
  const FusedStep *before = nullptr, *then = nullptr;
  const OpInfo *beforeOp = nullptr;
  CUdeviceptr thenOut = 0;
  int64_t staticShared = 0; // the static shared bytes of the entries with `before`
  /// The tensor-core entries (GemvAbi.h): _mma16 (32 weight rows a block),
  /// _mmaw16, _mmaw32, _mmaw64 (64 a block); the product's, and the ones
  /// ending in the GLU `then`.
  CUfunction mma[4] = {}, thenMma[4] = {};
  /// The blocks that split K in _mma16 and in the _mmaw entries
  /// (gemvMmaSplit, GemvAbi.h: by the shape and the block's weight rows).
  int mmaSplit = 1, mmaSplitWide = 1;

  bool hasMma() const { return mma[0] || mma[1] || mma[2] || mma[3]; }
  /// Which of `entries` a run of M rows takes, -1 for none: M above the
  /// one-row GEMV's rows and within ctx.gemvMmaRows; up to 16 rows _mma16
  /// (_mmaw16 where ctx.gemvMmaWide is 2), then _mmaw32 and _mmaw64 (none
  /// where ctx.gemvMmaWide is 0).
  int mmaEntry(const StepContext &ctx, int64_t M, const CUfunction (&entries)[4]) const {
    if (M < 2 || M <= ctx.gemvRows || M > ctx.gemvMmaRows || M > kGemvMmaRows)
      return -1;
    if (M <= 16 && entries[0] && (ctx.gemvMmaWide < 2 || !entries[1]))
      return 0;
    const int i = M <= 16 ? 1 : M <= 32 ? 2 : 3;
    return ctx.gemvMmaWide > 0 && entries[i] ? i : -1;
  }
  /// The blocks of entry e's launch, and the split they carry.
  unsigned mmaGrid(int e) const {
    const int64_t cols = e == 0 ? kGemvMmaOutputs : kGemvMmaWideOutputs;
    return static_cast<unsigned>((N + cols - 1) / cols * (e == 0 ? mmaSplit : mmaSplitWide));
  }
  int64_t mmaSplitOf(int e) const { return e == 0 ? mmaSplit : mmaSplitWide; }

  /// Which neighbours this run takes into its GEMV: one row, every result
  /// of the body before one row too, an entry for the pair; or, of 2 to 64
  /// rows, the GLU after where the tensor-core entry that ends in it runs.
  std::pair<bool, bool> choice(const StepContext &ctx, const ProgramRun &run) const;
  /// The profile's kind of a run with those neighbours; "" for none.
  static std::string fusedKind(bool withBefore, bool withThen);
  /// Runs the entry for (withBefore, withThen) on one row.
  Status runFused(StepContext &ctx, const ProgramRun &run, bool withBefore, bool withThen);

protected:
  /// Launches `fn` on one row over `grid` blocks of 256 threads (a warp an
  /// output), writing the GLU's result at `out` (0: the product y), with
  /// the body's symbols and pointers `q` and `shared` dynamic bytes.
  virtual Status launchFused(StepContext &ctx, CUfunction fn, CUdeviceptr out, unsigned grid, GencGemvPrologue &q,
                             unsigned shared, const std::string &name) = 0;
};

// matmul(a, W[, bias]) {epilogue, transpose_b}: a generated GEMV kernel for
// up to 8 rows where the weight lies [N, K] (runtime/cuda/GemvAbi.h), else
// one cuBLASLt call.
class GemmStep final : public GemvStep {
public:
  GemmShape shape;
  CUdeviceptr a = 0, b = 0, bias = 0, y = 0;
  CUfunction gemv[4] = {}; // rows <= 1, 2, 4, 8

  std::string profileKind(const StepContext &ctx, const ProgramRun &run) const override;
  Status run(StepContext &ctx, const ProgramRun &run) override;

protected:
  Status launchFused(StepContext &ctx, CUfunction fn, CUdeviceptr out, unsigned grid, GencGemvPrologue &q,
                     unsigned shared, const std::string &name) override;
};

/// The step of a matmul (`where` names it in errors), with its GEMV kernels
/// where the context allows them (ctx.gemv): the fused op right before it
/// (`fusedBefore`, whose step is `fusedStepBefore`) may be taken into its
/// one-row GEMV.
Status gemmStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, const std::string &where,
                const OpInfo *fusedBefore, FusedStep *fusedStepBefore, std::unique_ptr<GemmStep> &out);
/// The step of a fused op, its body's kernel from `kernelOf`; the matmul
/// right before it (`gemmBefore`, whose step is `gemmStepBefore`) may take
/// it into its one-row GEMV.
Status fusedStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod,
                 const std::map<std::string, const KernelInfo *> &kernelOf, const std::string &where,
                 const OpInfo *gemmBefore, GemvStep *gemmStepBefore, std::unique_ptr<FusedStep> &out);
/// Where matmul `op` alone reads a result of the fused op `prev` right
/// before it, `g` (op's step) may run `prev`'s row inside its one-row GEMV
/// (GemvFusion.cpp).
Status prepareBefore(const ValueMap &vm, const OpInfo &op, const OpInfo &prev, FusedStep &f, const KernelModule &mod,
                     const Device &dev, GemvStep &g);
/// Where the elementwise fused op `op` alone reads the product of `mm`, `g`
/// (mm's step) may run it inside its GEMV (GemvFusion.cpp).
Status prepareThen(const ValueMap &vm, const OpInfo &mm, const OpInfo &op, FusedStep &f, const KernelModule &mod,
                   GemvStep &g);
/// kv_attention / cross_attention / packed_attention: the op's kernel family.
Status attentionStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, std::unique_ptr<Step> &out);
/// Tree attention's combine after a kv_attention op (ctx.tree set).
Status treeCombineStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, std::unique_ptr<Step> &out);
/// matmul_nbits: the plan's 4/8-bit GEMV and tiled kernels (NBitsSteps.cpp);
/// the fused op right before it may be taken into its one-row GEMV, as in
/// gemmStep.
Status nbitsGemmStep(const OpInfo &op, const ValueMap &vm, const KernelModule &mod, const std::string &where,
                     const OpInfo *fusedBefore, FusedStep *fusedStepBefore, std::unique_ptr<GemvStep> &out);
/// A view op whose result has a buffer of its own: a device copy.
Status copyStep(const OpInfo &op, const ValueMap &vm, const std::string &where, std::unique_ptr<Step> &out);

/// The parameters attention step `step` (an attention op's) gives its decode
/// kernel for a decode run of `T` tokens, for a kernel that calls the decode
/// and merge routines itself (the step kernel, StepRunner.cpp), and the
/// splits of a token's keys it would choose, at most `maxSplits` (0: any);
/// false where the op has no decode kernel that computes its own q, k, v
/// rows, or is not a self-attention over one GPU's cache.
bool attentionDecodeParams(const Step &step, const StepContext &ctx, int64_t T, int64_t maxSplits,
                           GencAttnParams &p, int64_t &splits);

} // namespace genrt::cuda
