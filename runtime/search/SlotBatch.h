// One batch of prompts mapped onto decoder cache slots, and the search
// strategies that run over it. Internal to runtime/search.
//
// Item i, row r lives in slot i * rowsPerItem + r. A row is a beam (beam
// search) or one of the returned samples (sampling).
#pragma once
#include "runtime/Decoder.h"
#include "runtime/search/Generate.h"
#include "runtime/search/StopStrings.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace genrt {
namespace search {

struct BatchItem {
  std::vector<int64_t> sourceIds;     // encoder-decoder: the encoder's input
  std::vector<int64_t> decoderPrompt; // what the decoder is prefilled with
  std::vector<int64_t> history;       // the prompt as the logits processors see it
  uint64_t promptIndex = 0;           // position in the caller's prompt list
};

/// HF's encoder_input_ids for the item: the source, or a decoder-only prompt.
inline const std::vector<int64_t> &encoderIds(const BatchItem &item) {
  return item.sourceIds.empty() ? item.history : item.sourceIds;
}

class SlotBatch {
public:
  using Clock = std::chrono::steady_clock;

  SlotBatch(Decoder &decoder, std::vector<BatchItem> items, int64_t rowsPerItem,
            GenerationStats &stats, Clock::time_point start, GenerationObserver &observer);

  int64_t numItems() const { return int64_t(items_.size()); }
  int64_t rowsPerItem() const { return rows_; }
  int64_t vocab() const { return vocab_; }
  const BatchItem &item(int64_t i) const { return items_[i]; }
  int32_t slot(int64_t item, int64_t row) const { return int32_t(item * rows_ + row); }

  /// Empties every slot of the decoder, encodes the sources (encoder-decoder) and
  /// prefills every item's prompt in one packed forward into its row 0;
  /// row 0's cache is then copied to the item's other rows. logits: one row
  /// per item.
  Status prefill(std::vector<float> &logits);
  /// prefill() without the copies (the caller treats row 0 as every row's
  /// source at its first reorder), and the prompt's beam candidates ranked
  /// by the decoder (Decoder::forwardBeams) instead of logits:
  /// rows[i * rowsPerItem() + j] is row j's rule for item i's logits; k
  /// (token, score) pairs a rule.
  Status prefillBeams(const std::vector<BeamRow> &rows, int64_t k, std::vector<int32_t> &candTokens,
                      std::vector<float> &candScores);
  /// prefill() for one row an item, greedy's first tokens chosen by the
  /// decoder (Decoder::forwardGreedy: on a GPU only the ids and their
  /// log-softmax cross, not the logits): chosen[i], logprobs[i] for item i.
  Status prefillGreedy(std::vector<int64_t> &chosen, std::vector<float> &logprobs);
  /// prefill() without the copies (as prefillBeams), with the logits: one
  /// row per item (beam sampling).
  Status prefillLogits(std::vector<float> &logits);
  /// Appends tokens[k] to slots[k] (one forward call); logits: row k.
  /// prefill and step fail with "generation stopped" when the observer asks.
  Status step(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
              std::vector<float> &logits);
  /// step() with greedy's choice made by the decoder (Decoder::forwardGreedy):
  /// chosen[k] and its log-softmax logprobs[k] instead of the logits.
  Status stepGreedy(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                    std::vector<int64_t> &chosen, std::vector<float> &logprobs);
  /// step() with beam candidates ranked by the decoder (Decoder::forwardBeams):
  /// k (token, score) pairs a slot, by rows[k]'s rule.
  Status stepBeams(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                   const std::vector<BeamRow> &rows, int64_t k, std::vector<int32_t> &candTokens,
                   std::vector<float> &candScores);
  /// step() with greedy's or sampling's token chosen by the decoder
  /// (Decoder::forwardTokens): rows[k]'s edits, `rule`, draws[k].
  Status stepTokens(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                    const std::vector<BeamRow> &rows, const std::vector<double> &draws, const SampleRule &rule,
                    std::vector<int64_t> &chosen, std::vector<float> &logprobs);
  /// Whether the decoder chooses tokens under `rule` itself (a GPU).
  bool choosesTokens(const SampleRule &rule) const { return dec_.choosesTokens(rule); }
  /// Decoder::reorderSlots, skipping entries that would not move anything;
  /// shared[k]: the positions dst[k] already holds of src[k] (empty: none).
  Status reorder(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                 const std::vector<int64_t> &shared = {});

  /// Call when a step has chosen tokens: records time to first token once.
  void tokensChosen();
  GenerationStats &stats() { return stats_; }
  GenerationObserver &observer() { return obs_; }

private:
  Status startPrefill(std::vector<Chunk> &chunks);
  Status timedStep(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                   const std::function<Status(const std::vector<Chunk> &)> &forward);
  Decoder &dec_;
  std::vector<BatchItem> items_;
  int64_t rows_;
  int64_t vocab_;
  GenerationStats &stats_;
  Clock::time_point start_;
  GenerationObserver &obs_;
  bool firstStepDone_ = false;
};

/// What ends a row besides max_new_tokens: HF's EosTokenCriteria and
/// StopStringCriteria.
struct StopRules {
  std::vector<int64_t> eos;
  StopStrings strings;
};

/// Greedy search (cfg.doSample false) or multinomial sampling.
Status runGreedyOrSample(SlotBatch &batch, const GenerationConfig &cfg, const StopRules &stop,
                         std::vector<GenerationResult> &out);
/// HF's vectorized beam search (_beam_search).
Status runBeamSearch(SlotBatch &batch, const GenerationConfig &cfg, const StopRules &stop,
                     std::vector<GenerationResult> &out);

} // namespace search
} // namespace genrt
