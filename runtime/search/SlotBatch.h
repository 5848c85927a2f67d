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

  /// Empties every slot of the decoder, encodes the sources (encoder-decoder)
  /// and prefills every item's prompt in one packed forward into its row 0,
  /// answering `request` for one row an item (Beams: rowsPerItem() rules an
  /// item, row j's rule for the item's logits). Fails with "generation
  /// stopped" when the observer asks.
  Status prefill(const ChoiceRequest &request, ChoiceAnswer &answer);
  /// Row 0's cache copied to every other row of its item (sampling several
  /// sequences a prompt; beam search instead treats row 0 as every row's
  /// source at its first reorder).
  Status copyFirstRow();
  /// Appends tokens[k] to slots[k] (one forward call) and answers `request`
  /// for row k. Fails with "generation stopped" when the observer asks.
  Status step(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens, const ChoiceRequest &request,
              ChoiceAnswer &answer);
  /// Whether the decoder answers requests like `request` where the logits
  /// are (a GPU).
  bool chooses(const ChoiceRequest &request) const { return dec_.chooses(request); }
  /// Decoder::reorderSlots, skipping entries that would not move anything;
  /// shared[k]: the positions dst[k] already holds of src[k] (empty: none).
  Status reorder(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                 const std::vector<int64_t> &shared = {});

  /// Call when a step has chosen tokens: records time to first token once.
  void tokensChosen();
  GenerationStats &stats() { return stats_; }
  GenerationObserver &observer() { return obs_; }

private:
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
