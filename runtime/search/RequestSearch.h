// One prompt's search as a state machine that advances a step at a time:
// greedy search and sampling (GreedyAndSampling.cpp) and beam search
// (BeamSearch.cpp), with Hugging Face `generate` semantics. Each step it
// adds its chunks to a shared StepIO (runtime/search/DecoderCalls.h), and
// after the one forward every request of the step shares, reads its
// answers. generate() drives a batch of them in lockstep (Generate.cpp);
// the server's scheduler (runtime/serve/Scheduler.h) admits and retires
// them at any step. Internal to the runtime.
#pragma once
#include "runtime/search/DecoderCalls.h"
#include "runtime/search/Generate.h"
#include "runtime/search/StopStrings.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace genrt {
namespace search {

struct BatchItem {
  std::vector<int64_t> sourceIds;     // encoder-decoder: the encoder's input
  std::vector<int64_t> decoderPrompt; // what the decoder is prefilled with
  std::vector<int64_t> history;       // the prompt as the logits processors see it
  uint64_t promptIndex = 0;           // the observer's prompt index and the draws' (Sampler.h)
};

/// The item of prompt `index`: masked positions left out of what the
/// decoder is fed (kept in the history); an encoder-decoder's prompt is its
/// source, its decoder prompt the start token.
BatchItem makeBatchItem(const Prompt &p, const ModelInfo &info, uint64_t index);

/// HF's encoder_input_ids for the item: the source, or a decoder-only prompt.
inline const std::vector<int64_t> &encoderIds(const BatchItem &item) {
  return item.sourceIds.empty() ? item.history : item.sourceIds;
}

/// What ends a row besides max_new_tokens: HF's EosTokenCriteria and
/// StopStringCriteria.
struct StopRules {
  std::vector<int64_t> eos;
  StopStrings strings;
};

/// What a search says after a step about stopping: HF's loop stops a batch
/// when every item cannot improve, or (early_stopping=True) every item's
/// finished set is full, or every candidate of every item hit the stopping
/// criteria. Greedy and sampling: all three are "every row is done".
struct StopVote {
  bool cannotImprove = false, full = false, allHit = false;
};
/// Whether a group of searches that stop together (a batch) stops.
bool groupStops(const std::vector<StopVote> &votes);

/// Per-token log-probabilities for the server's `logprobs`: the chosen
/// token's and the `top` likeliest tokens' log_softmax of the model's raw
/// logits (before processors and warpers). Greedy and sampling only.
struct LogprobOptions {
  int64_t top = -1; // -1: none wanted; 0: the chosen token's only
};

struct SearchContext {
  int64_t vocab = 0;
  std::vector<int32_t> slots; // the request's rows, in row order
  GenerationObserver *observer = nullptr;
  /// Whether the decoder chooses greedy / sampled tokens under the
  /// request's rule where the logits are (Decoder::choosesTokens).
  bool decoderChoosesTokens = false;
  LogprobOptions logprobs;
};

class RequestSearch {
public:
  virtual ~RequestSearch() = default;
  /// The slots a request of cfg occupies: beams or returned samples.
  static int64_t rowsFor(const GenerationConfig &cfg) { return cfg.rowsPerPrompt(); }

  /// Appends its chunks for the next forward to `io`: the prompt into row
  /// 0's slot (past the `promptCached` tokens a caller fed already, see
  /// setPromptCached), then a token a live row.
  virtual void addInputs(StepIO &io) = 0;
  /// Reads its chunks' answers from the forward: one search step.
  virtual Status takeOutputs(const StepIO &io) = 0;
  /// After takeOutputs: would it stop were it alone.
  virtual StopVote vote() const = 0;
  /// Closes the step: `groupEnds` (its group stops) finishes it and reports
  /// what is left to the observer; otherwise it queues the slot reorders
  /// its next step needs in `io`.
  virtual void endStep(bool groupEnds, StepIO &io) = 0;
  bool finished() const { return finished_; }
  /// What generate() returns for it; valid once finished.
  virtual GenerationResult takeResult() = 0;

  const BatchItem &item() const { return item_; }
  const std::vector<int32_t> &slots() const { return ctx_.slots; }
  /// Tokens of the decoder prompt already in row 0's slot (fed by the
  /// caller as prompt pieces of earlier steps).
  void setPromptCached(int64_t n) { promptCached_ = n; }
  bool prefilled() const { return prefilled_; }

protected:
  RequestSearch(BatchItem item, GenerationConfig cfg, const StopRules &stop, SearchContext ctx)
      : item_(std::move(item)), cfg_(std::move(cfg)), stop_(stop), ctx_(std::move(ctx)) {}
  /// The prompt chunk's tokens (what is not cached yet).
  std::vector<int64_t> promptRest() const {
    return std::vector<int64_t>(item_.decoderPrompt.begin() + promptCached_, item_.decoderPrompt.end());
  }
  GenerationObserver &observer() { return *ctx_.observer; }

  BatchItem item_;
  const GenerationConfig cfg_;
  const StopRules &stop_;
  SearchContext ctx_;
  int64_t promptCached_ = 0;
  bool prefilled_ = false; // the prompt's answer was taken
  bool finished_ = false;
};

/// Greedy search (cfg.doSample false) or multinomial sampling: HF's _sample.
/// `stop` must outlive it.
std::unique_ptr<RequestSearch> makeGreedyOrSample(BatchItem item, const GenerationConfig &cfg,
                                                  const StopRules &stop, SearchContext ctx);
/// HF's vectorized beam search (_beam_search), one item of it. Fails when
/// cfg's beams do not fit the vocabulary.
Status makeBeamSearch(BatchItem item, const GenerationConfig &cfg, const StopRules &stop, SearchContext ctx,
                      std::unique_ptr<RequestSearch> &out);
/// The search cfg asks for (beam search when num_beams > 1).
Status makeSearch(BatchItem item, const GenerationConfig &cfg, const StopRules &stop, SearchContext ctx,
                  std::unique_ptr<RequestSearch> &out);

} // namespace search
} // namespace genrt
