// How the CUDA executor runs: the options read from the environment once,
// where an executor is made (makeCudaExecutor, and for each GPU of a
// tree-attention group makeCudaReplica), and passed down. Nothing else under
// runtime/cuda/ reads the environment. Every variable is in runtime/Env.cpp's
// table (`genrun --help-env`); docs/cuda.md says what each path does.
#pragma once
#include "runtime/Status.h"
#include "runtime/cuda/GemvAbi.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace genrt::cuda {

/// Diagnostics and the switches that GPU checks and A/B runs turn (tools/
/// gpu_test.sh, tools/attn_check.sh, tools/profile_gpu.sh, ...). The
/// defaults are the product's paths; each other value takes a path that is
/// kept only to be compared against the default, or prints what it saw.
struct CudaDebugOptions {
  /// GENC_CUDA_GRAPHS=0: every decode step launched kernel by kernel, not
  /// captured once per token count and replayed.
  bool graphs = true;
  /// GENC_CUDA_PREFILL_GRAPHS=1: a @prefill run whose shape (its symbols,
  /// logit rows, attention tiles and the token choice) came before is
  /// captured as a graph and replayed after that (CudaExecutor.cpp): the
  /// server's steps of decode rows with prompt pieces beside them repeat a
  /// few shapes thousands of times.
  bool prefillGraphs = false;
  /// GENC_CUDA_SYNC=1: a synchronisation after every step, so that an
  /// asynchronous error names its kernel (no graphs either).
  bool sync = false;
  /// GENC_CUDA_PROFILE=1: GPU time per step kind (events around each
  /// step, graphs off), printed when the executor closes.
  bool profile = false;
  /// GENC_CUDA_SKIP=gemm,attention,...: steps of these kinds are not run
  /// (garbage tokens, real timing of the rest); "prefill:attention" names a
  /// kind in one program only.
  std::set<std::string> skipKinds;
  /// GENC_CUDA_ATTN_TRACE=1: the stage stamps of a plan compiled with
  /// genc --attention-trace (profile cuda.attention_trace), printed at the 8th decode step.
  bool attnTrace = false;
  /// GENC_CUDA_TOKENS_CHECK=1: every token the device chooses checked
  /// against the host's choice on the same logits; counts printed at close.
  bool tokensCheck = false;
  /// GENC_CUDA_GEMV_FUSION: which neighbours a one-row GEMV runs itself: bit
  /// 1 the fused row kernel before it (norm), bit 2 the elementwise GLU
  /// after it (glu); 0 neither, 3 both (1, the default).
  int gemvFusion = 3;
  /// GENC_CUDA_SHARED_PROMPTS=0: a plan of shared prompts keeps a whole copy
  /// of the cache a beam (reordered by copies), not (region, index) pairs.
  bool sharedPrompts = true;
  /// GENC_CUDA_DECODE=0: decode steps take the attend kernel, not the
  /// Flash-Decoding kernel.
  bool decodeKernel = true;
  /// GENC_CUDA_PREFILL=0: runs of many tokens take the attend kernel, not
  /// the tensor-core prefill kernel.
  bool prefillKernel = true;
  /// GENC_CUDA_PREFILL_DECODE=0: in a run of many tokens, the tokens that
  /// are their slot's only one (the server's decode rows beside prompt
  /// pieces) take the prefill kernel's one-token tiles, one block a query
  /// head, rather than the decode kernel (AttentionSteps.cpp).
  bool prefillDecode = true;
  /// GENC_CUDA_BEAMS=0: beam candidates ranked on the host from copied logits.
  bool beamsOnDevice = true;
  /// GENC_CUDA_TOKENS=0: greedy with processors and sampling on the host
  /// from copied logits.
  bool tokensOnDevice = true;
  /// GENC_CUDA_STEP_CHECK=1: every decode step the step kernel takes also
  /// runs kernel by kernel first (graphs off, the arena poisoned before
  /// each); the two steps' logits compared, the summary printed at close.
  bool stepCheck = false;
  /// GENC_CUDA_STEP_TRACE=1: the step kernel stamps each item (start, end of
  /// its waits, end); the 8th step's stamps summed by op kind at close; =2:
  /// then op by op against the floor of each op's weight bytes.
  int stepTrace = 0;
  /// GENC_CUDA_STEP_STALL=N: step op N's items never signal their counter,
  /// so the ops waiting on it time out: the bounded wait's error, tested.
  int stepStallOp = -1;
  /// GENC_TREE_FORCE=1: the tree executor (NCCL, the combine kernels) even
  /// on one GPU.
  bool treeForce = false;
};

/// The settings a user may want, and the debug switches beside them.
struct CudaOptions {
  /// GENC_CUDA_GEMV: one-row products on the GEMV kernels (1) or on
  /// cuBLASLt (0); -1 (unset): the GEMV kernels on sm_90 and newer.
  int gemv = -1;
  /// GENC_CUDA_GEMV_ROWS (1..8): the most rows a product takes the GEMV
  /// kernels for.
  int64_t gemvRows = 1;
  /// GENC_CUDA_GEMV_MMA (0..64): the most rows a 16-bit product takes the
  /// tensor-core GEMV entries for (from gemvRows + 1; default 16); 0: cuBLASLt.
  /// Above 16 rows only plans compiled with GENC_GEMV_MMA_WIDE=1 have entries
  /// (_mmaw32, _mmaw64); the _mma32 / _mma64 of plans from an older genc are
  /// not taken.
  int64_t gemvMmaRows = kGemvMmaRowsDefault;
  /// GENC_CUDA_GEMV_MMA_SPLIT (1 to 4): the blocks that split K in those
  /// entries, for every product (A/B runs); 0, unset: by each product's
  /// shape (gemvMmaSplit in GemvAbi.h).
  int gemvMmaSplit = 0;
  /// GENC_CUDA_GEMV_MMA_WIDE (0, 1, 2): which tensor-core entries take
  /// those rows (StepContext::gemvMmaWide); default 1.
  int gemvMmaWide = 1;
  /// GENC_CUDA_NBITS_ROWS (0..64): the most rows a 4/8-bit product takes
  /// the GEMV or tensor-core kernels for; more go to the tiled kernel
  /// (NBitsAbi.h).
  int64_t nbitsGemvRows = 64;
  /// GENC_CUDA_NBITS_GEMV_ROWS (0..8): the most rows a 4/8-bit product takes
  /// the CUDA-core GEMV for, the tensor-core entries above where the family
  /// has them. 3: on the H200 (1.1B int4, 2026-12-03) the GEMV took 0.989
  /// ms/token at 1 row and 3.258 at 8 (its a-dot grows with the rows), the
  /// tensor-core entry 1.799 and 1.548 (flat up to 16 rows): they cross near 3.
  int64_t nbitsCoreRows = 3;
  /// GENC_CUDA_STREAM: decode steps take the TMA decode kernel, where the
  /// plan has one, never (0) or always (1); -1 (unset): where a sequence
  /// holds kStreamMinKeys keys or more, on sm_90 and newer.
  int streamKernel = -1;
  /// GENC_CUDA_MERGE_ROWS: the decode splits' merge a warp a (token, head)
  /// (attn_N_merge_rows, where the plan has it and a run takes at most 8
  /// splits) never (0), always (1), or, unset (-1), where a run has more
  /// rows (tokens x heads) than the GPU has SMs: the same sums either way.
  int mergeRows = -1;
  /// GENC_CUDA_STEP=1: decode steps the plan's step kernel takes run as one
  /// launch (sm_90 and newer); 0, the default: kernel by kernel.
  int stepKernel = 0;
  /// GENC_TREE_COMBINE=gather (1): tree attention combines the shards by one
  /// all-gather; 0: by two all-reduces.
  int treeCombine = 0;
  /// Tree attention across processes (runtime/cuda/TreeExecutor.h):
  /// GENC_NCCL_RANKS, the GPUs in all (unset: this process's);
  /// GENC_NCCL_FIRST_RANK, this process's first GPU's rank;
  /// GENC_NCCL_ID_FILE, where rank 0's process writes the NCCL id (empty:
  /// none).
  std::optional<int> ncclRanks;
  int ncclFirstRank = 0;
  std::string ncclIdFile;
  /// GENC_NCCL_TIMEOUT_S: a collective's wait before the group is aborted.
  double ncclTimeoutS = 120;
  /// GENC_NCCL_LIB: the only NCCL library tried (empty: libnccl.so.2, then
  /// libnccl.so).
  std::string ncclLibrary;
  /// GENC_CUBLASLT (where set): the cuBLASLt library tried first.
  std::optional<std::string> cublasLt;
  CudaDebugOptions debug;
};

/// The options from the environment (runtime/Env.h); an unusable value is
/// an error naming it.
Status readCudaOptions(CudaOptions &out);

} // namespace genrt::cuda
