// The CUDA executor's options read from the environment (CudaOptions.h):
// the one place under runtime/cuda/ that calls genrt::env::get.
#include "runtime/cuda/CudaOptions.h"

#include "runtime/Env.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/NBitsAbi.h"

#include <algorithm>
#include <cstdlib>

namespace genrt::cuda {
namespace {

using genrt::env::is;

// The value of `name`, where it is set and not empty.
const char *given(const char *name) {
  const char *v = genrt::env::get(name);
  return v && *v ? v : nullptr;
}

} // namespace

Status readCudaOptions(CudaOptions &out) {
  out = CudaOptions();
  CudaDebugOptions &d = out.debug;
  if (const char *gv = given("GENC_CUDA_GEMV"))
    out.gemv = std::string(gv) == "1" ? 1 : 0;
  if (const char *gr = given("GENC_CUDA_GEMV_ROWS"))
    out.gemvRows = std::clamp<int64_t>(std::atoll(gr), 1, kGemvMaxRows);
  if (const char *gm = given("GENC_CUDA_GEMV_MMA"))
    out.gemvMmaRows = std::clamp<int64_t>(std::atoll(gm), 0, kGemvMmaRows);
  for (const char *v : {"1", "2", "3", "4"}) // else 0: by shape
    if (is("GENC_CUDA_GEMV_MMA_SPLIT", v))
      out.gemvMmaSplit = std::atoi(v);
  for (const char *v : {"0", "1", "2"})
    if (is("GENC_CUDA_GEMV_MMA_WIDE", v))
      out.gemvMmaWide = std::atoi(v);
  if (const char *nr = given("GENC_CUDA_NBITS_ROWS"))
    out.nbitsGemvRows = std::clamp<int64_t>(std::atoll(nr), 0, kNBitsMmaRows);
  if (const char *nc = given("GENC_CUDA_NBITS_GEMV_ROWS"))
    out.nbitsCoreRows = std::clamp<int64_t>(std::atoll(nc), 0, kNBitsGemvRows);
  if (is("GENC_CUDA_MERGE_ROWS", "0"))
    out.mergeRows = 0;
  else if (is("GENC_CUDA_MERGE_ROWS", "1"))
    out.mergeRows = 1;
  if (is("GENC_CUDA_STREAM", "0"))
    out.streamKernel = 0;
  else if (is("GENC_CUDA_STREAM", "1"))
    out.streamKernel = 1;
  d.stepCheck = is("GENC_CUDA_STEP_CHECK", "1");
  d.stepTrace = is("GENC_CUDA_STEP_TRACE", "2") ? 2 : is("GENC_CUDA_STEP_TRACE", "1") ? 1 : 0;
  if (const char *v = given("GENC_CUDA_STEP_STALL"))
    d.stepStallOp = std::max(-1, std::atoi(v));
  // Off unless asked for: on an H200 the step kernel is still slower than
  // the kernels one by one (docs/step-kernel.md); its check and trace ask.
  if (is("GENC_CUDA_STEP", "1") || d.stepCheck || d.stepTrace || d.stepStallOp >= 0)
    out.stepKernel = 1;
  out.treeCombine = is("GENC_TREE_COMBINE", "gather") ? 1 : 0;
  if (const char *v = given("GENC_NCCL_RANKS"))
    out.ncclRanks = std::atoi(v);
  if (const char *v = given("GENC_NCCL_FIRST_RANK"))
    out.ncclFirstRank = std::atoi(v);
  if (const char *v = given("GENC_NCCL_ID_FILE"))
    out.ncclIdFile = v;
  if (const char *to = genrt::env::get("GENC_NCCL_TIMEOUT_S"); to && std::atof(to) > 0)
    out.ncclTimeoutS = std::atof(to);
  if (const char *v = given("GENC_NCCL_LIB"))
    out.ncclLibrary = v;
  if (const char *v = genrt::env::get("GENC_CUBLASLT"))
    out.cublasLt = v;

  d.graphs = !is("GENC_CUDA_GRAPHS", "0");
  d.prefillGraphs = is("GENC_CUDA_PREFILL_GRAPHS", "1");
  d.sync = is("GENC_CUDA_SYNC", "1");
  d.profile = is("GENC_CUDA_PROFILE", "1");
  if (const char *skip = genrt::env::get("GENC_CUDA_SKIP")) {
    std::string list = skip;
    for (size_t at = 0; at <= list.size();) {
      size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at)
        d.skipKinds.insert(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  d.attnTrace = is("GENC_CUDA_ATTN_TRACE", "1");
  d.tokensCheck = is("GENC_CUDA_TOKENS_CHECK", "1");
  const char *fu = genrt::env::get("GENC_CUDA_GEMV_FUSION");
  const std::string fs = fu ? fu : "";
  if (fs != "" && fs != "0" && fs != "1" && fs != "norm" && fs != "glu")
    return Status::error("GENC_CUDA_GEMV_FUSION=" + fs + ": expected 0, 1, norm or glu");
  d.gemvFusion = fs == "0" ? 0 : fs == "norm" ? 1 : fs == "glu" ? 2 : 3;
  d.sharedPrompts = !is("GENC_CUDA_SHARED_PROMPTS", "0");
  d.decodeKernel = !is("GENC_CUDA_DECODE", "0");
  d.prefillKernel = !is("GENC_CUDA_PREFILL", "0");
  d.prefillDecode = !is("GENC_CUDA_PREFILL_DECODE", "0");
  d.beamsOnDevice = !is("GENC_CUDA_BEAMS", "0");
  d.tokensOnDevice = !is("GENC_CUDA_TOKENS", "0");
  d.treeForce = is("GENC_TREE_FORCE", "1");
  return Status::ok();
}

} // namespace genrt::cuda
