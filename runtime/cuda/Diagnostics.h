// What the CUDA executor reports where CudaDebugOptions ask for it: the
// GPU time per step kind (GENC_CUDA_PROFILE=1) and the token check's counts
// (GENC_CUDA_TOKENS_CHECK=1), printed when the executor closes, and the
// attention kernels' stage stamps (GENC_CUDA_ATTN_TRACE=1), printed at the
// 8th decode step. All of it goes to stderr.
#pragma once
#include "runtime/cuda/Device.h"
#include "runtime/cuda/TokenChoice.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace genrt::cuda {

/// GPU time per step kind, summed over the runs (runSteps times each step
/// between events).
struct StepProfile {
  std::map<std::string, std::pair<double, int64_t>> ms; // kind -> (ms, steps)
  void add(const std::string &kind, double stepMs);
  /// "genrun: profile: KIND  MS ms over N steps (MS ms each)", a line a kind.
  void print() const;
};

/// The reports an executor prints when it closes, each only where it was
/// asked for (null: not asked); destroying it prints them.
class CloseReport {
public:
  CloseReport() = default;
  ~CloseReport();
  CloseReport(const CloseReport &) = delete;
  CloseReport &operator=(const CloseReport &) = delete;

  std::unique_ptr<StepProfile> profile;   // GENC_CUDA_PROFILE=1
  std::unique_ptr<TokenCheck> tokenCheck; // GENC_CUDA_TOKENS_CHECK=1
};

/// A plan compiled with genc --attention-trace (codegen/AttentionKernels.h): the
/// last layer's decode and merge stage stamps of block (0, 0), in ns after
/// split 0's entry, and the cycles each stage took inside its block; a plan
/// without them says so.
void printAttentionTrace(const Device &dev, const KernelModule &mod);

} // namespace genrt::cuda
