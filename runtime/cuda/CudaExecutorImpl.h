// The CUDA executor's class, one GPU's worth (CudaExecutor.h makes it). Its
// members are defined by concern:
//   CudaExecutor.cpp    loading (init), closing, a run from staging to the
//                       wait, @encode
//   MemoryPlan.cpp      every device buffer sized before any is allocated
//   RunInputs.cpp       a run's inputs through pinned memory to the device
//   ChoiceLaunches.cpp  the token choices on the device: greedy, beam top-k,
//                       the token passes (the Executor choice API)
// and it holds the parts that are files of their own: the options
// (CudaOptions.h), the weights' upload (WeightUpload.h), the programs'
// steps (CudaSteps.h), the decode steps' graphs (CudaGraphs.h), the cache
// operations (KvCache.h), the reports (Diagnostics.h) and, as one GPU of a
// tree-attention group, its NCCL channel (NcclChannel.h).
#pragma once
#include "runtime/Executor.h"

#include "runtime/cuda/CudaGraphs.h"
#include "runtime/cuda/CudaOptions.h"
#include "runtime/cuda/CudaSteps.h"
#include "runtime/cuda/DeviceMemory.h"
#include "runtime/cuda/Diagnostics.h"
#include "runtime/cuda/KvCache.h"
#include "runtime/cuda/NcclChannel.h"
#include "runtime/cuda/StepRunner.h"
#include "runtime/cuda/TokenAbi.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace genrt::cuda {

class CudaExecutor final : public Executor {
public:
  CudaExecutor(std::shared_ptr<const Plan> plan, const CudaOptions &options);
  ~CudaExecutor() override;

  /// Opens the GPU, plans and allocates the memory, uploads the weights and
  /// resolves every program. `channel`: this executor is one GPU of a
  /// tree-attention group (it joins the group later, through the channel).
  Status init(NcclChannel *channel);

  std::string deviceName() const override;
  int64_t memoryBytes() const override { return mem_.totalBytes(); }
  int64_t deviceBytes() const override { return dev_.freeBytes; } // free at open, before any allocation
  std::string memoryReport() const override;
  std::string choiceReport() const override;

  // Where a tree-attention group runs the same step on every GPU, only one
  // returns results: the others are given no answer (nullptr).
  Status run(const ProgramRun &run, const ChoiceRequest &request, ChoiceAnswer *answer) override;
  bool chooses(const ChoiceRequest &request, ProgramKind kind) const override;
  Status encode(const ProgramRun &run) override;
  bool sharesPrompts() const override { return shared_; }
  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                   const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) override;

private:
  // What a run leaves in the pinned buffer (execute's ChoiceKind): the
  // logits, or with Greedy each row's token (i64) then its log-softmax
  // (f32), or with Beams each rule's beamK_ candidates (GencBeamCand), or
  // with Tokens what the token passes chose (as Greedy).

  // CudaExecutor.cpp
  bool kernelsSharePrompts() const;
  Status groupIntact() const;
  Status waitStream(const std::string &what);
  static int64_t rowsOf(const ProgramRun &run);
  Status execute(const ProgramRun &run, ChoiceKind choice);
  Status enqueue(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice);
  Status checkStep(const CompiledProgram &cp, const ProgramRun &run, int64_t R, ChoiceKind choice);
  // MemoryPlan.cpp
  Status planMemory(bool tree);
  void planTokenChoice(int64_t maxRows);
  // RunInputs.cpp
  void stage(const ProgramRun &run);
  Status enqueueInputs(const ProgramRun &run);
  // ChoiceLaunches.cpp
  Status runGreedy(const ProgramRun &run, ChoiceAnswer *answer);
  Status runBeams(const ProgramRun &run, const std::vector<BeamRow> &rows, int64_t k, ChoiceAnswer *answer);
  Status runTokens(const ProgramRun &run, const std::vector<BeamRow> &rows, const std::vector<double> &draws,
                   const SampleRule &rule, ChoiceAnswer *answer);
  void initTokenChoice();
  GencTokenParams tokenParams(CUdeviceptr logits, int64_t R);
  void takeChoices(int64_t R, int64_t *tokens, float *logprobs) const;
  Status enqueueChoice(const CompiledProgram &cp, int64_t R, ChoiceKind choice);
  int64_t graphKey(ChoiceKind choice) const;
  std::vector<int64_t> prefillKey(const CompiledProgram &cp, const ProgramRun &run, ChoiceKind choice) const;

  // The run's host-side inputs as stage() laid them out in `staging_`.
  struct Staged {
    void *ids = nullptr, *positions = nullptr, *rows = nullptr, *places = nullptr, *tiles = nullptr,
         *crossLengths = nullptr;
    int64_t tokens = 0, rowCount = 0, crossCount = 0;
  };

  std::shared_ptr<const Plan> plan_;
  CudaOptions options_;
  KvLayout kv_; // the plan's caches, or this GPU's shard of them
  NcclChannel *channel_ = nullptr; // this GPU's place in a tree-attention group (none: one GPU)
  Device dev_;
  DeviceMemory mem_;
  KernelModule mod_;
  std::unique_ptr<Gemm> gemm_;
  CUstream stream_ = nullptr;
  StepContext ctx_;
  std::vector<CUdeviceptr> weightPtr_;
  std::map<std::string, CompiledProgram> programs_;
  GraphCache graphs_;
  PrefillGraphs prefillGraphs_;
  bool useGraphs_ = true;
  int64_t decodeReplays_ = 0; // decode steps replayed (the attention trace prints at the 8th)
  CUfunction greedyFn_ = nullptr, beamFn_ = nullptr, beamNormFn_ = nullptr, tokenFn_ = nullptr;
  CUfunction crossStoreFn_ = nullptr; // an i8 cross cache's rows (genc_cross_store_i8)
  std::vector<int64_t> runEnd_ = std::vector<int64_t>(static_cast<size_t>(plan_->kv.slots), 0);
  CUdeviceptr choice_ = 0; // greedy's choices: i64 tokens [rows], then f32 log-softmax [rows]
  void *staging_ = nullptr, *logitsHost_ = nullptr;
  int64_t stagingBytes_ = 0, logitsBytes_ = 0, partialRows_ = 0, greedyParts_ = 1;
  bool shared_ = false; // shared prompts: the plan's layout, read through the pairs
  PairMirror pairs_;    // and their pinned mirror
  int64_t choiceRuns_ = 0, logitRuns_ = 0; // runs by where their tokens were chosen (--stats)
  int64_t beamIdsCap_ = 0, beamStagingBytes_ = 0, beamK_ = 1; // beam candidates (0 ids: none)
  int64_t beamRules_ = 0, beamShare_ = 1;                      // the rules' capacity; rules a logits row
  bool beamRenormalize_ = false;
  void *beamStaging_ = nullptr;
  // Greedy with processors and sampling on the device (genc_token_pass).
  int64_t tokenIdsCap_ = 0, tokenStagingBytes_ = 0;
  uint32_t tokenPasses_ = 0;
  void *tokenStaging_ = nullptr, *checkLogits_ = nullptr;
  KvCopier copier_; // beam reordering (plans of more than one beam)
  StepRunner step_; // @decode_step as one launch (the plan's step kernel)
  Staged staged_;
  CloseReport report_; // the profile and the token check, printed when the executor closes
};

} // namespace genrt::cuda
