// A program as the CUDA executor runs it: each op resolved once, at load, to
// a step with its device addresses fixed (weights, arena offsets, caches);
// a run only supplies the symbols (tokens, rows) and the token places.
#pragma once
#include "runtime/Executor.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/Nccl.h"

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

namespace genrt::cuda {

/// What every step may use: the device, the stream and the executor's buffers.
struct StepContext {
  const Device *dev = nullptr;
  Gemm *gemm = nullptr;
  CUstream stream = nullptr;
  const Plan *plan = nullptr;
  /// The caches as this executor holds them: the plan's, or one shard of
  /// it (tree attention).
  const KvLayout *layout = nullptr;
  CUdeviceptr arena = 0, kv = 0, cross = 0;
  CUdeviceptr scratch = 0, partial = 0, places = 0, crossLengths = 0;
  CUdeviceptr pairs = 0; // shared prompts: int2 [slots, max_length] (AttentionAbi.h); 0: none
  int64_t partialRows = 0; // rows of `partial` (token x head x split)
  /// The run's token tiles for attn_N_prefill (i32 pairs: first token,
  /// count), and how many.
  CUdeviceptr tiles = 0;
  int64_t tileCount = 0;
  CUdeviceptr tickets = 0;  // u32 per (token, attention block row), zero between launches
  /// Per plan weight: laid out [N, K] at load for the GEMV kernels (it was
  /// [K, N] and only matmuls read it); its GEMMs then read it transposed.
  std::vector<char> weightTransposed;
  bool gemv = false; // GENC_CUDA_GEMV=1: the GEMV kernels for up to 8 rows
  /// The most rows a product takes the GEMV kernel for (1 by default:
  /// cuBLASLt wins from 2 rows; GENC_CUDA_GEMV_ROWS=N, at most 8).
  int64_t gemvRows = 1;
  /// A one-row matmul runs the fused row kernel that feeds it (bit 1) and
  /// the elementwise GLU that alone reads it (bit 2) itself
  /// (GENC_CUDA_GEMV_FUSION=0 / norm / glu: neither / the first / the second).
  int gemvFusion = 3;
  /// Bytes of the next GEMVs' weights that the merge after a one-token
  /// decode kernel prefetches into L2 (GENC_CUDA_L2_PREFETCH_MB; 0: none).
  int64_t l2PrefetchBytes = 0;
  /// Tree attention (--gpus N): this GPU is shard `shard` of `shards`; after
  /// each self-attention op its output is combined with the other GPUs'
  /// through `comm` (lse -> max, then [w·o | w] -> sum, in f32).
  struct Tree {
    const NcclApi *nccl = nullptr;
    ncclComm_t comm = nullptr;
    int64_t shards = 1, shard = 0;
    CUdeviceptr lse = 0, lseMax = 0, packed = 0;
    /// 0: the paper's two all-reduces; 1: one all-gather of [o | lse]
    /// (GENC_TREE_COMBINE=gather), combined by each GPU itself.
    int combine = 0;
  } tree;
  std::map<std::string, CUdeviceptr> arguments;
  bool syncEachStep = false; // GENC_CUDA_SYNC=1: an asynchronous error names its kernel
  /// GENC_CUDA_PROFILE=1: device time per step kind (events around each
  /// step, no graphs), printed to stderr when the executor closes.
  bool profile = false;
  std::map<std::string, std::pair<double, int64_t>> profileMs; // kind -> (ms, steps)
  /// GENC_CUDA_SKIP=gemm,attention: steps of these kinds are not run (the
  /// tokens are garbage): what a step costs without them, with graphs on,
  /// where events around tiny kernels would mostly time themselves;
  /// "prefill:attention" skips a kind in one program only.
  std::set<std::string> skipKinds;
};

class Step {
public:
  virtual ~Step() = default;
  virtual Status run(StepContext &ctx, const ProgramRun &run) = 0;
  /// The profile's row for this run (GENC_CUDA_PROFILE=1).
  virtual std::string profileKind(const StepContext &, const ProgramRun &) const { return kind; }
  /// "matmul at \"/m/lm_head/MatMul\"": errors name the op.
  std::string what;
  std::string kind; // gemm, fused, attention, copy: the profile's rows
};

struct CompiledProgram {
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<CUdeviceptr> outputs;  // the program's outputs' buffers
  std::vector<DType> outputStored;   // and how they hold them
};

/// Resolves every op of `prog`; an op the GPU cannot run is an error naming
/// it (and why), at load.
Status compileProgram(const Program &prog, StepContext &ctx, const KernelModule &mod,
                      const std::vector<CUdeviceptr> &weights, CompiledProgram &out);

Status runSteps(const CompiledProgram &cp, StepContext &ctx, const ProgramRun &run);

/// Beam reordering on the device (Executor::copySlots): per layer, the
/// sources' rows into `scratch` (one layer's K and V of every slot), then
/// into their destinations, so a slot may be both; by genc_kv_copy (two
/// launches a layer, the copy records through pinned `staging` into
/// `records`) where the plan has it and the rows are whole 16-byte words,
/// else by 2D memcpys.
struct KvCopier {
  CUfunction fn = nullptr;
  CUdeviceptr scratch = 0, records = 0;
  void *staging = nullptr;
  int64_t maxRecords = 0;
};
Status copyCacheSlots(StepContext &ctx, const KvCopier &k, const std::vector<int32_t> &dst,
                      const std::vector<int32_t> &src, const std::vector<int64_t> &lengths,
                      const std::vector<int64_t> &from);

} // namespace genrt::cuda
