// The CUDA executor's options from the environment (runtime/cuda/
// CudaOptions.h): the defaults with nothing set are the product's paths,
// each variable takes the values runtime/Env.cpp's table names (anything
// else keeps the default, as the executor read them before they were
// gathered here), and a bad GENC_CUDA_GEMV_FUSION is one clear error.
#include "runtime/cuda/CudaOptions.h"
#include "runtime/cuda/GemvAbi.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace {

using genrt::cuda::CudaOptions;
using genrt::cuda::readCudaOptions;

const char *const kNames[] = {
    "GENC_CUBLASLT",          "GENC_CUDA_ATTN_TRACE",     "GENC_CUDA_BEAMS",      "GENC_CUDA_DECODE",
    "GENC_CUDA_GEMV",         "GENC_CUDA_GEMV_FUSION",    "GENC_CUDA_GEMV_MMA",   "GENC_CUDA_GEMV_MMA_SPLIT",
    "GENC_CUDA_GEMV_MMA_WIDE", "GENC_CUDA_GEMV_ROWS",   "GENC_CUDA_GRAPHS",
    "GENC_CUDA_MERGE_ROWS",   "GENC_CUDA_NBITS_GEMV_ROWS", "GENC_CUDA_NBITS_ROWS",
    "GENC_CUDA_PREFILL",      "GENC_CUDA_PREFILL_GRAPHS", "GENC_CUDA_PROFILE",        "GENC_CUDA_SHARED_PROMPTS", "GENC_CUDA_SKIP",
    "GENC_CUDA_STREAM",       "GENC_CUDA_SYNC",           "GENC_CUDA_TOKENS",     "GENC_CUDA_TOKENS_CHECK",
    "GENC_NCCL_FIRST_RANK",   "GENC_NCCL_ID_FILE",        "GENC_NCCL_LIB",        "GENC_NCCL_RANKS",
    "GENC_NCCL_TIMEOUT_S",    "GENC_TREE_COMBINE",        "GENC_TREE_FORCE"};

// Sets exactly `vars` (every other option variable unset) for one read, and
// puts the process's environment back afterwards.
class Env {
public:
  explicit Env(const std::map<std::string, std::string> &vars) {
    for (const char *n : kNames) {
      if (const char *v = std::getenv(n))
        saved_[n] = v;
      unsetenv(n);
    }
    for (const auto &[n, v] : vars)
      setenv(n.c_str(), v.c_str(), 1);
  }
  ~Env() {
    for (const char *n : kNames)
      unsetenv(n);
    for (const auto &[n, v] : saved_)
      setenv(n.c_str(), v.c_str(), 1);
  }

private:
  std::map<std::string, std::string> saved_;
};

CudaOptions read(const std::map<std::string, std::string> &vars) {
  Env env(vars);
  CudaOptions o;
  genrt::Status s = readCudaOptions(o);
  EXPECT_TRUE(s) << s.message();
  return o;
}

TEST(CudaOptions, NothingSetIsTheDefaultPaths) {
  const CudaOptions o = read({});
  EXPECT_EQ(o.gemv, -1); // the device decides: GEMV kernels on sm_90 and newer
  EXPECT_EQ(o.gemvRows, 1);
  EXPECT_EQ(o.streamKernel, -1);
  EXPECT_EQ(o.treeCombine, 0);
  EXPECT_FALSE(o.ncclRanks.has_value());
  EXPECT_EQ(o.ncclFirstRank, 0);
  EXPECT_EQ(o.ncclIdFile, "");
  EXPECT_EQ(o.ncclTimeoutS, 120.0);
  EXPECT_EQ(o.ncclLibrary, "");
  EXPECT_FALSE(o.cublasLt.has_value());
  const auto &d = o.debug;
  EXPECT_TRUE(d.graphs);
  EXPECT_FALSE(d.sync);
  EXPECT_FALSE(d.profile);
  EXPECT_TRUE(d.skipKinds.empty());
  EXPECT_FALSE(d.attnTrace);
  EXPECT_FALSE(d.tokensCheck);
  EXPECT_EQ(d.gemvFusion, 3);
  EXPECT_TRUE(d.sharedPrompts);
  EXPECT_TRUE(d.decodeKernel);
  EXPECT_TRUE(d.prefillKernel);
  EXPECT_TRUE(d.beamsOnDevice);
  EXPECT_TRUE(d.tokensOnDevice);
  EXPECT_FALSE(d.treeForce);
}

TEST(CudaOptions, GemvChoices) {
  EXPECT_EQ(read({{"GENC_CUDA_GEMV", "1"}}).gemv, 1);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV", "0"}}).gemv, 0);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV", "yes"}}).gemv, 0); // only "1" forces them on
  EXPECT_EQ(read({{"GENC_CUDA_GEMV", ""}}).gemv, -1);   // empty: as unset
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_ROWS", "8"}}).gemvRows, 8);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_ROWS", "20"}}).gemvRows, 8); // at most kGemvMaxRows
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_ROWS", "0"}}).gemvRows, 1);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_ROWS", ""}}).gemvRows, 1);
  EXPECT_EQ(read({}).nbitsCoreRows, 3);
  EXPECT_EQ(read({}).mergeRows, -1); // unset: by the run's rows
  EXPECT_EQ(read({{"GENC_CUDA_MERGE_ROWS", "0"}}).mergeRows, 0);
  EXPECT_EQ(read({{"GENC_CUDA_MERGE_ROWS", "1"}}).mergeRows, 1);
  EXPECT_EQ(read({{"GENC_CUDA_MERGE_ROWS", "2"}}).mergeRows, -1); // neither 0 nor 1: as unset
  EXPECT_EQ(read({{"GENC_CUDA_NBITS_GEMV_ROWS", "0"}}).nbitsCoreRows, 0); // the tensor cores from one row
  EXPECT_EQ(read({{"GENC_CUDA_NBITS_GEMV_ROWS", "20"}}).nbitsCoreRows, 8);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_FUSION", "0"}}).debug.gemvFusion, 0);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_FUSION", "1"}}).debug.gemvFusion, 3);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_FUSION", "norm"}}).debug.gemvFusion, 1);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_FUSION", "glu"}}).debug.gemvFusion, 2);
}

TEST(CudaOptions, TensorCoreGemvRowsAndSplit) {
  EXPECT_EQ(read({}).gemvMmaRows, genrt::cuda::kGemvMmaRowsDefault);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA", "0"}}).gemvMmaRows, 0); // cuBLASLt
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA", "100"}}).gemvMmaRows, genrt::cuda::kGemvMmaRows);
  EXPECT_EQ(read({}).gemvMmaSplit, 0); // by the product's shape
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "1"}}).gemvMmaSplit, 1);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "2"}}).gemvMmaSplit, 2);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "3"}}).gemvMmaSplit, 3);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "4"}}).gemvMmaSplit, 4);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "5"}}).gemvMmaSplit, 0); // not a split it takes: as unset
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "two"}}).gemvMmaSplit, 0);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", "0"}}).gemvMmaSplit, 0);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_SPLIT", ""}}).gemvMmaSplit, 0);
  EXPECT_EQ(read({}).gemvMmaWide, 1); // _mma16 to 16 rows, _mmaw above
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_WIDE", "0"}}).gemvMmaWide, 0);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_WIDE", "2"}}).gemvMmaWide, 2);
  EXPECT_EQ(read({{"GENC_CUDA_GEMV_MMA_WIDE", "3"}}).gemvMmaWide, 1); // not one it takes: as unset
}

// The split by shape: the 1.1B Llama's products on 132 SMs (an H100 or
// H200) — the 2,048-wide O and down on 2 blocks a group, the rest alone —
// a 576-wide model's within its rounds, the SMs' count never past 4, and a
// forced split whatever the shape (the checks split the fixtures' products).
TEST(CudaOptions, TensorCoreGemvSplitByShape) {
  using genrt::cuda::gemvMmaSplit;
  EXPECT_EQ(gemvMmaSplit(2048, 2048, 132, 0), 2);  // O: 64 groups
  EXPECT_EQ(gemvMmaSplit(2048, 5632, 132, 0), 2);  // down
  EXPECT_EQ(gemvMmaSplit(2560, 2048, 132, 0), 1);  // QKV: 80 groups
  EXPECT_EQ(gemvMmaSplit(11264, 2048, 132, 0), 1); // gate and up
  EXPECT_EQ(gemvMmaSplit(576, 576, 132, 0), 1);    // 18 rounds of 32 k: too few for 2 parts
  EXPECT_EQ(gemvMmaSplit(576, 1536, 132, 0), 3);   // 48 rounds: 3 parts of 16
  EXPECT_EQ(gemvMmaSplit(64, 8192, 132, 0), 4);    // 2 groups: at most 4
  EXPECT_EQ(gemvMmaSplit(2560, 2048, 132, 3), 3);  // forced
  EXPECT_EQ(gemvMmaSplit(2560, 64, 132, 3), 3);    // forced: even over 2 rounds
}

TEST(CudaOptions, ABadGemvFusionIsAnError) {
  Env env(std::map<std::string, std::string>{{"GENC_CUDA_GEMV_FUSION", "both"}});
  CudaOptions o;
  genrt::Status s = readCudaOptions(o);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "GENC_CUDA_GEMV_FUSION=both: expected 0, 1, norm or glu");
}

TEST(CudaOptions, KernelPathsTakeOnlyTheirListedValues) {
  EXPECT_EQ(read({{"GENC_CUDA_STREAM", "0"}}).streamKernel, 0);
  EXPECT_EQ(read({{"GENC_CUDA_STREAM", "1"}}).streamKernel, 1);
  EXPECT_EQ(read({{"GENC_CUDA_STREAM", "2"}}).streamKernel, -1);
  EXPECT_FALSE(read({{"GENC_CUDA_DECODE", "0"}}).debug.decodeKernel);
  EXPECT_TRUE(read({{"GENC_CUDA_DECODE", "false"}}).debug.decodeKernel);
  EXPECT_FALSE(read({{"GENC_CUDA_PREFILL", "0"}}).debug.prefillKernel);
  EXPECT_FALSE(read({{"GENC_CUDA_BEAMS", "0"}}).debug.beamsOnDevice);
  EXPECT_FALSE(read({{"GENC_CUDA_TOKENS", "0"}}).debug.tokensOnDevice);
  EXPECT_FALSE(read({{"GENC_CUDA_SHARED_PROMPTS", "0"}}).debug.sharedPrompts);
  EXPECT_FALSE(read({{"GENC_CUDA_GRAPHS", "0"}}).debug.graphs);
  EXPECT_TRUE(read({{"GENC_CUDA_GRAPHS", "1"}}).debug.graphs);
  EXPECT_FALSE(read({}).debug.prefillGraphs);
  EXPECT_TRUE(read({{"GENC_CUDA_PREFILL_GRAPHS", "1"}}).debug.prefillGraphs);
  EXPECT_TRUE(read({{"GENC_CUDA_SYNC", "1"}}).debug.sync);
  EXPECT_FALSE(read({{"GENC_CUDA_SYNC", "0"}}).debug.sync);
  EXPECT_TRUE(read({{"GENC_CUDA_PROFILE", "1"}}).debug.profile);
  EXPECT_TRUE(read({{"GENC_CUDA_ATTN_TRACE", "1"}}).debug.attnTrace);
  EXPECT_TRUE(read({{"GENC_CUDA_TOKENS_CHECK", "1"}}).debug.tokensCheck);
  EXPECT_TRUE(read({{"GENC_TREE_FORCE", "1"}}).debug.treeForce);
  EXPECT_EQ(read({{"GENC_TREE_COMBINE", "gather"}}).treeCombine, 1);
  EXPECT_EQ(read({{"GENC_TREE_COMBINE", "allreduce"}}).treeCombine, 0);
}

TEST(CudaOptions, SkipListDropsEmptyNames) {
  const auto kinds = read({{"GENC_CUDA_SKIP", "gemm,,prefill:attention,"}}).debug.skipKinds;
  EXPECT_EQ(kinds, (std::set<std::string>{"gemm", "prefill:attention"}));
  EXPECT_TRUE(read({{"GENC_CUDA_SKIP", ""}}).debug.skipKinds.empty());
}

TEST(CudaOptions, TreeAttentionAcrossProcesses) {
  const CudaOptions o = read({{"GENC_NCCL_RANKS", "4"},
                              {"GENC_NCCL_FIRST_RANK", "2"},
                              {"GENC_NCCL_ID_FILE", "/shared/nccl.id"},
                              {"GENC_NCCL_TIMEOUT_S", "2.5"},
                              {"GENC_NCCL_LIB", "/opt/nccl/libnccl.so.2"}});
  EXPECT_EQ(o.ncclRanks, std::optional<int>(4));
  EXPECT_EQ(o.ncclFirstRank, 2);
  EXPECT_EQ(o.ncclIdFile, "/shared/nccl.id");
  EXPECT_EQ(o.ncclTimeoutS, 2.5);
  EXPECT_EQ(o.ncclLibrary, "/opt/nccl/libnccl.so.2");
  // A rank count of 0 is kept (the tree executor refuses it), not read as unset.
  EXPECT_EQ(read({{"GENC_NCCL_RANKS", "0"}}).ncclRanks, std::optional<int>(0));
  EXPECT_FALSE(read({{"GENC_NCCL_RANKS", ""}}).ncclRanks.has_value());
  // A timeout that is not a positive number keeps the default.
  EXPECT_EQ(read({{"GENC_NCCL_TIMEOUT_S", "-3"}}).ncclTimeoutS, 120.0);
  EXPECT_EQ(read({{"GENC_NCCL_TIMEOUT_S", "soon"}}).ncclTimeoutS, 120.0);
}

TEST(CudaOptions, CublasLtPathWhereSet) {
  EXPECT_EQ(read({{"GENC_CUBLASLT", "/x/libcublasLt.so.13"}}).cublasLt,
            std::optional<std::string>("/x/libcublasLt.so.13"));
  EXPECT_EQ(read({{"GENC_CUBLASLT", ""}}).cublasLt, std::optional<std::string>(""));
}

} // namespace
