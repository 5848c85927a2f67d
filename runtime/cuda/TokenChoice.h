// The host side of genc_token_pass (runtime/cuda/TokenAbi.h): which passes
// a rule runs, each row's rule and ids into the pinned staging buffer, and
// the launches. The CUDA executor owns the buffers; this only fills and
// launches them.
#pragma once
#include "runtime/choice/Sampling.h"
#include "runtime/cuda/Device.h"
#include "runtime/cuda/TokenAbi.h"

#include <cstdint>
#include <vector>

namespace genrt::cuda {

/// A bit per TokenPass the rule needs over a vocabulary of `vocab`.
uint32_t tokenPasses(const SampleRule &rule, int64_t vocab);

/// The i32 words a row's edits take in a rule's id list: two a biased id
/// (id, float bits), one each other id.
int64_t editWords(const BeamRow &row);
/// Writes row's edits to e and their ids to list from `at` (advanced past
/// them); e's penalties are 1 where nothing is penalized.
void stageEdits(const BeamRow &row, GencEdits &e, int32_t *list, int32_t &at);

/// Lays out rows[r]'s edits, the rule and draws[r] as GencTokenRow [R] then
/// their ids (i32) in `staging`; false when the ids exceed `idsCap`.
bool stageTokenRows(const std::vector<BeamRow> &rows, const std::vector<double> &draws, const SampleRule &rule,
                    int64_t vocab, int64_t idsCap, void *staging, int64_t &ids);

/// Launches the passes of `passes` over R rows of `parts` parts each.
Status launchTokenPasses(const Device &dev, CUfunction fn, CUstream stream, GencTokenParams p, uint32_t passes,
                         int64_t parts);

/// GENC_CUDA_TOKENS_CHECK=1: every device choice checked against the host
/// reference (runtime/choice/Sampling.h) on the same raw logits, copied back
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
