// The host side of genc_token_pass (runtime/cuda/TokenAbi.h): which passes
// a rule runs, each row's rule and ids into the pinned staging buffer, and
// the launches. The CUDA executor owns the buffers; this only fills and
// launches them.
#pragma once
#include "runtime/SampleChoice.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/TokenAbi.h"

#include <cstdint>
#include <vector>

namespace genrt::cuda {

/// A bit per TokenPass the rule needs over a vocabulary of `vocab`.
uint32_t tokenPasses(const SampleRule &rule, int64_t vocab);

/// Lays out rows[r]'s edits, the rule and draws[r] as GencTokenRow [R] then
/// their ids (i32) in `staging`; false when the ids exceed `idsCap`.
bool stageTokenRows(const std::vector<BeamRow> &rows, const std::vector<double> &draws, const SampleRule &rule,
                    int64_t vocab, int64_t idsCap, void *staging, int64_t &ids);

/// Launches the passes of `passes` over R rows of `parts` parts each.
Status launchTokenPasses(const Device &dev, CUfunction fn, CUstream stream, GencTokenParams p, uint32_t passes,
                         int64_t parts);

/// GENC_CUDA_TOKENS_CHECK=1: every device choice checked against the host
/// reference (runtime/SampleChoice.h) on the same raw logits, copied back
/// beside the choice: the same token, inside the reference's support
/// (top-k / top-p / min-p), the logprob within float rounding. The counts
/// are printed when the executor closes.
struct TokenCheck {
  int64_t rows = 0, differ = 0, outside = 0;
  double maxLogprobDiff = 0;
  void check(const float *logits, int64_t vocab, const std::vector<BeamRow> &rows, const std::vector<double> &draws,
             const SampleRule &rule, const int64_t *tokens, const float *logprobs);
  /// "genrun: token check: ..." (stderr).
  void report() const;
};

} // namespace genrt::cuda
