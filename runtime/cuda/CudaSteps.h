// A program as the CUDA executor runs it: each op resolved once, at load, to
// a step with its device addresses fixed (weights, arena offsets, caches);
// a run only supplies the symbols (tokens, rows) and the token places. The
// step kinds: GemmSteps.cpp (cuBLASLt and the GEMV kernels), FusedSteps.cpp
// (generated fused kernels), AttentionSteps.cpp (the attention families and
// tree attention's combine), CopySteps.cpp (views); CudaProgram.cpp resolves
// a program's ops to them and runs them.
#pragma once
#include "runtime/Executor.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/Nccl.h"

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

namespace genrt::cuda {

class NcclChannel;
struct StepProfile;

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
  /// Of those, the leading tiles of one token each: tokens 0 .. loneTokens - 1
  /// are each their slot's only token in the run (a server's decode rows come
  /// first in a mixed step), which the decode kernel takes where
  /// `prefillDecode` (CudaOptions.h).
  int64_t loneTokens = 0;
  bool prefillDecode = true;
  CUdeviceptr tickets = 0;  // u32 per (token, attention block row), zero between launches
  /// Per plan weight: laid out [N, K] at load for the GEMV kernels (it was
  /// [K, N] and only matmuls read it); its GEMMs then read it transposed.
  std::vector<char> weightTransposed;
  bool gemv = false; // the GEMV kernels for up to 8 rows (CudaOptions::gemv)
  /// The most rows a product takes the GEMV kernel for (1 by default:
  /// cuBLASLt wins from 2 rows; GENC_CUDA_GEMV_ROWS=N, at most 8).
  int64_t gemvRows = 1;
  /// The most rows a 16-bit product takes the tensor-core GEMV entries for,
  /// above gemvRows (GENC_CUDA_GEMV_MMA; 0: none, cuBLASLt).
  int64_t gemvMmaRows = kGemvMmaRowsDefault;
  /// Which tensor-core entries (GENC_CUDA_GEMV_MMA_WIDE): 1 the _mma16 up
  /// to 16 rows and the _mmaw entries of 64 weight rows a block above; 2
  /// _mmaw at every count; 0 _mma16 alone.
  int gemvMmaWide = 1;
  /// The blocks that split K in them: 1 to 4 for every product
  /// (GENC_CUDA_GEMV_MMA_SPLIT), 0 by each product's shape; their parts
  /// ([blocks, 64, 32] f32) and tickets (u32 a group, zero between launches).
  int gemvMmaSplit = 0;
  CUdeviceptr gemvParts = 0, gemvTickets = 0;
  /// The most rows a 4/8-bit product takes its GEMV or tensor-core
  /// kernels for, the tiled kernel above (GENC_CUDA_NBITS_ROWS; NBitsSteps.cpp).
  int64_t nbitsGemvRows = 64;
  /// The most rows a 4/8-bit product takes the CUDA-core GEMV for
  /// (GENC_CUDA_NBITS_GEMV_ROWS; the tensor-core entries above).
  int64_t nbitsCoreRows = 3;
  /// A one-row matmul runs the fused row kernel that feeds it (bit 1) and
  /// the elementwise GLU that alone reads it (bit 2) itself
  /// (GENC_CUDA_GEMV_FUSION=0 / norm / glu: neither / the first / the second).
  int gemvFusion = 3;
  /// The attention families' kernels an op may take where the plan has
  /// them (CudaOptions): the Flash-Decoding kernel for decode steps
  /// (GENC_CUDA_DECODE=0: the attend kernel), the tensor-core kernel for
  /// runs of many tokens (GENC_CUDA_PREFILL=0: the attend kernel), and the
  /// TMA decode kernel (GENC_CUDA_STREAM: -1 where a sequence holds
  /// kStreamMinKeys keys or more, 0 never, 1 always).
  bool decodeKernel = true, prefillKernel = true;
  int streamKernel = -1;
  /// The merge by rows (CudaOptions::mergeRows): -1 where rows > SMs, 0, 1.
  int mergeRows = -1;
  /// Tree attention (--gpus N): this GPU is shard `shard` of `shards`; after
  /// each self-attention op its output is combined with the other GPUs'
  /// through the channel's communicator (lse -> max, then [w·o | w] -> sum,
  /// in f32).
  struct Tree {
    const NcclApi *nccl = nullptr;
    const NcclChannel *channel = nullptr;
    int64_t shards = 1, shard = 0;
    CUdeviceptr lse = 0, lseMax = 0, packed = 0;
    /// 0: the paper's two all-reduces; 1: one all-gather of [o | lse]
    /// (GENC_TREE_COMBINE=gather), combined by each GPU itself.
    int combine = 0;
  } tree;
  std::map<std::string, CUdeviceptr> arguments;
  bool syncEachStep = false; // GENC_CUDA_SYNC=1: an asynchronous error names its kernel
  /// GENC_CUDA_PROFILE=1: GPU time per step kind (events around each
  /// step, no graphs), printed to stderr when the executor closes; null: off.
  StepProfile *profile = nullptr;
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
  int32_t op = -1;  // the program's op it runs
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

} // namespace genrt::cuda
