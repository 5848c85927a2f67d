#include "runtime/Env.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace genrt::env {

const std::vector<Variable> &variables() {
  static const std::vector<Variable> table = {
      {"GENC_CPU_FUSED_LOOPS", "genrun", "0: the CPU executor runs fused bodies op by op (A/B runs)"},
      {"GENC_CPU_PROFILE", "genrun", "1: the CPU executor prints each op's time"},
      {"GENC_CPU_ROW_ATTENTION", "genrun", "1: every CPU prefill takes the row attention path (A/B runs)"},
      {"GENC_CUBLASLT", "genrun", "a path: the cuBLASLt library to try first"},
      {"GENC_CUDA_ATTN_TRACE", "genrun",
       "1: print the stage stamps of a plan compiled with genc --attention-trace (profile cuda.attention_trace)"},
      {"GENC_CUDA_BEAMS", "genrun", "0: beam candidates ranked on the host from copied logits (A/B runs)"},
      {"GENC_CUDA_DECODE", "genrun", "0: decode steps take the attend kernel, not the decode kernel (A/B runs)"},
      {"GENC_CUDA_GEMV", "genrun", "0 / 1: one-row products on cuBLASLt / the GEMV kernels (default: GEMV on sm_90)"},
      {"GENC_CUDA_GEMV_FUSION", "genrun",
       "0, 1, norm or glu: which neighbours a one-row GEMV runs itself (default 1: both)"},
      {"GENC_CUDA_GEMV_MMA", "genrun",
       "0..64: products of more rows than the GEMV's and at most that many take the tensor-core GEMV entries of 16-bit plans (default 16; 0: cuBLASLt; above 16 only plans compiled with GENC_GEMV_MMA_WIDE=1 have entries)"},
      {"GENC_CUDA_GEMV_MMA_SPLIT", "genrun",
       "1 to 4: the blocks that split K in every 16-bit tensor-core GEMV (A/B runs; default: by each product's shape, to fill the SMs)"},
      {"GENC_CUDA_GEMV_MMA_WIDE", "genrun",
       "0, 1, 2: the 16-bit tensor-core GEMV entries of 64 weight rows a block (a's rows in shared memory) for none, above 16 rows (default), or every count"},
      {"GENC_CUDA_GEMV_ROWS", "genrun", "1..8: products of up to that many rows take the GEMV kernels (default 1)"},
      {"GENC_CUDA_GRAPHS", "genrun", "0: no CUDA graphs (every step launched kernel by kernel)"},
      {"GENC_CUDA_MERGE_ROWS", "genrun",
       "0 / 1: the decode splits' merge, of decode steps and of a mixed step's lone tokens, a block a token / a warp a "
       "row (default: a warp a row where rows > SMs, up to 8 splits)"},
      {"GENC_CUDA_NBITS_GEMV_ROWS", "genrun",
       "0..8: 4/8-bit products of up to that many rows take the CUDA-core GEMV, more the tensor-core entries where the plan has them (default 3)"},
      {"GENC_CUDA_NBITS_ROWS", "genrun",
       "0..64: 4/8-bit products of up to that many rows take the GEMV or tensor-core kernels, more the tiled kernel (default 64)"},
      {"GENC_CUDA_PREFILL", "genrun", "0: runs of many tokens take the attend kernel (A/B runs)"},
      {"GENC_CUDA_PREFILL_DECODE", "genrun",
       "0: in a run of many tokens, a slot's lone token (a server's decode row) takes the prefill kernel, not the decode kernel (A/B runs)"},
      {"GENC_CUDA_PREFILL_GRAPHS", "genrun",
       "1: a @prefill run of a shape that came before replays a CUDA graph (the server's mixed steps; A/B runs)"},
      {"GENC_CUDA_PROFILE", "genrun", "1: each kernel's time, graphs off"},
      {"GENC_CUDA_SHARED_PROMPTS", "genrun",
       "0: a plan of shared prompts (genc --max-new-tokens) keeps a whole copy a beam on the GPU (A/B runs)"},
      {"GENC_CUDA_SKIP", "genrun",
       "a comma list of step kinds (gemm, fused, copy, attention, prefill:attention, ...) not run: timing only"},
      {"GENC_CUDA_STEP", "genrun",
       "1: decode steps of up to 8 rows run as one launch of the plan's step kernel (sm_90; default 0: kernel by "
       "kernel, faster today)"},
      {"GENC_CUDA_STEP_CHECK", "genrun",
       "1: each decode step the step kernel takes also runs kernel by kernel (arena poisoned first); the logits "
       "compared, a summary at exit"},
      {"GENC_CUDA_STEP_STALL", "genrun",
       "N: the step kernel's op N never signals its counter (testing the bounded wait: the step fails with the "
       "waiting item named)"},
      {"GENC_CUDA_STEP_TRACE", "genrun",
       "1: the step kernel stamps its items; where the 8th decode step's time went (waits and work by op kind) "
       "printed at exit; 2: also op by op against the floor of each op's weight bytes"},
      {"GENC_CUDA_STREAM", "genrun",
       "0 / 1: decode steps never / always take the TMA decode kernel where the plan has it (default: caches of "
       "4096 keys or more, sm_90)"},
      {"GENC_CUDA_SYNC", "genrun", "1: synchronise after every step (debugging)"},
      {"GENC_CUDA_TOKENS", "genrun", "0: greedy and sampled tokens chosen on the host from copied logits (A/B runs)"},
      {"GENC_CUDA_TOKENS_CHECK", "genrun", "1: every token the GPU chooses checked against the host's choice"},
      {"GENC_DECODE_MIN_TILES", "genc",
       "1, 2, 3, 4, 6, 8 or 16: the least key tiles a decode attention split takes, so that short contexts take "
       "fewer splits and the merge has less or nothing to do (A/B runs; default 1)"},
      {"GENC_GEMV_MMA_WIDE", "genc",
       "1: 16-bit plans also get the tensor-core GEMV entries of 64 weight rows a block (_mmaw16/32/64; A/B runs: "
       "their form of 2026-12-07 was half as fast as cuBLASLt at 32-64 rows; 2026-12-08's, the weights as the mma's A, "
       "is checked on an H100 but not yet timed there)"},
      {"GENC_GEMV_MMA_WIDE_ROUNDS", "genc",
       "4 or 8: the rounds of 32 k of its 16 weight rows a warp of the _mmaw entries keeps in flight (A/B runs; default 4)"},
      {"GENC_KERNEL_CACHE", "genc",
       "a folder, or off: where NVRTC's code is kept (default $XDG_CACHE_HOME/genc/kernels or "
       "~/.cache/genc/kernels; --kernel-cache wins)"},
      {"GENC_NCCL_FIRST_RANK", "genrun", "tree attention over processes: this process's first rank (default 0)"},
      {"GENC_NCCL_ID_FILE", "genrun", "tree attention over processes: the file that carries NCCL's group id"},
      {"GENC_NCCL_LIB", "genrun", "a path: the NCCL library to open (the only one tried)"},
      {"GENC_NCCL_RANKS", "genrun", "tree attention over processes: the ranks in all (default: this process's GPUs)"},
      {"GENC_NCCL_TIMEOUT_S", "genrun", "seconds to wait for the NCCL group (default 120)"},
      {"GENC_NVRTC_LINEINFO", "genc",
       "1: the kernels compiled with source lines (compute-sanitizer and Nsight name the line of genc --emit=cuda's source)"},
      {"GENC_PYTHON", "genrun", "genrun serve: the Python interpreter to run genc.serve with (default python3)"},
      {"GENC_SPLIT_DECODE", "genrun",
       "0 / 1: a step that mixes decode rows with prompt pieces (genrun serve) runs as one @prefill / as the rows' "
       "@decode_step (the GPU: its CUDA graph) then the pieces' @prefill (default 0)"},
      {"GENC_STEP_COUNT_LAST", "genc",
       "0: the step kernel's thread 0 adds an item's count to its op's counter (A/B runs; default 1: the last compute "
       "warp, while thread 0 goes on to the next item's waits)"},
      {"GENC_STEP_L2_AHEAD", "genc",
       "0, 2, 4, 8, 16 or 32: the step kernel's copy warp asks L2 for the weight pages that many ahead of those it "
       "copies into the ring (A/B runs with GENC_STEP_PAGES_MAX; default 0: none)"},
      {"GENC_STEP_PAGES_MAX", "genc",
       "2, 3, 4, 5, 6 or 8: at most that many weight pages in each step-kernel block's ring (A/B runs; default: as "
       "many as the shared memory holds)"},
      {"GENC_STEP_PAGE_KB", "genc", "8, 16 or 32: the step kernel's least weight page in KiB (A/B runs; default 8 where two of the widest weight rows fit, else 16)"},
      {"GENC_STEP_ROWS_INLINE", "genc",
       "0: one copy of each step-kernel row op (a norm), called by every routine that runs it (A/B runs; default 1: "
       "a copy inlined in each)"},
      {"GENC_STEP_SYNC_CHECK", "genc",
       "1: the step kernel counts each compute warp's barriers and prints the first item after which they differ "
       "(debugging)"},
      {"GENC_STEP_TEAM_RELEASE", "genc",
       "0: every compute warp waits for every page of the step kernel's ring and frees it (A/B runs; default 1: a page's team "
       "of warps only)"},
      {"GENC_TRACE_OUT", "genrun",
       "a path: where bench/kernel_trace.cpp (the CUPTI tracer) writes each kernel's start and end"},
      {"GENC_TREE_COMBINE", "genrun", "gather: tree attention combines the shards by a gather, not an all-reduce"},
      {"GENC_TREE_FORCE", "genrun", "1: the tree executor even on one GPU (tests)"},
  };
  return table;
}

const char *get(const char *name) { return std::getenv(name); }

bool is(const char *name, const char *value) {
  const char *v = get(name);
  return v && std::strcmp(v, value) == 0;
}

std::vector<std::string> unknownExecutorVariables(char **envp) {
  std::vector<std::string> out;
  for (char **e = envp; e && *e; ++e) {
    const char *eq = std::strchr(*e, '=');
    const std::string name(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    if (name.rfind("GENC_CPU_", 0) != 0 && name.rfind("GENC_CUDA_", 0) != 0)
      continue;
    bool known = false;
    for (const Variable &v : variables())
      known = known || name == v.name;
    if (!known)
      out.push_back(name);
  }
  return out;
}

int choice(const char *name, std::initializer_list<int> allowed, int fallback) {
  const char *v = get(name);
  if (!v)
    return fallback;
  for (int a : allowed)
    if (std::to_string(a) == v)
      return a;
  return fallback;
}

} // namespace genrt::env
