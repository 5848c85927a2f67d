#include "runtime/search/SlotBatch.h"

namespace genrt {
namespace search {

SlotBatch::SlotBatch(Decoder &decoder, std::vector<BatchItem> items, int64_t rowsPerItem,
                     GenerationStats &stats, Clock::time_point start, GenerationObserver &observer)
    : dec_(decoder), items_(std::move(items)), rows_(rowsPerItem), vocab_(decoder.info().vocabSize),
      stats_(stats), start_(start), obs_(observer) {}

// Asked before each forward call: the only places where a stop can wait
// long, and where nothing half-done has to be undone.
static Status stopRequested(GenerationObserver &obs) {
  return obs.shouldStop() ? Status::error("generation stopped") : Status::ok();
}

// Empties every slot (a batch owns the decoder while it runs; a slot left
// over from an earlier batch of more rows a prompt would still hold the
// prompt it shared, and a plan with shared prompts has a home per batch
// item only), encodes the sources (encoder-decoder) and prefills every
// item's prompt into its row 0.
Status SlotBatch::prefill(const ChoiceRequest &request, ChoiceAnswer &answer) {
  if (Status s = stopRequested(obs_); !s)
    return s;
  for (int32_t s = 0; s < dec_.maxSlots(); ++s)
    dec_.resetSlot(s);

  if (dec_.info().encoderDecoder) { // every item's source, packed into as few @encode runs as fit
    std::vector<std::vector<int64_t>> sources;
    std::vector<std::vector<int32_t>> slots(static_cast<size_t>(numItems()));
    for (int64_t i = 0; i < numItems(); ++i) {
      sources.push_back(items_[i].sourceIds);
      for (int64_t r = 0; r < rows_; ++r)
        slots[size_t(i)].push_back(slot(i, r));
    }
    if (Status s = dec_.encodeSources(sources, slots); !s)
      return s;
  }

  std::vector<Chunk> chunks;
  chunks.reserve(items_.size());
  for (int64_t i = 0; i < numItems(); ++i) {
    chunks.push_back(Chunk{slot(i, 0), items_[i].decoderPrompt});
    stats_.promptTokens += int64_t(items_[i].decoderPrompt.size());
  }
  ++stats_.forwardCalls;
  return dec_.forward(chunks, request, answer);
}

Status SlotBatch::copyFirstRow() {
  if (rows_ == 1)
    return Status::ok();
  std::vector<int32_t> dst, src;
  for (int64_t i = 0; i < numItems(); ++i)
    for (int64_t r = 1; r < rows_; ++r) {
      dst.push_back(slot(i, r));
      src.push_back(slot(i, 0));
    }
  return dec_.reorderSlots(dst, src);
}

Status SlotBatch::step(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                       const ChoiceRequest &request, ChoiceAnswer &answer) {
  if (Status s = stopRequested(obs_); !s)
    return s;
  std::vector<Chunk> chunks;
  chunks.reserve(slots.size());
  for (size_t k = 0; k < slots.size(); ++k)
    chunks.push_back(Chunk{slots[k], {tokens[k]}});
  ++stats_.forwardCalls;
  auto t0 = Clock::now();
  Status s = dec_.forward(chunks, request, answer);
  // A batch's first step pays one-time costs (a CUDA graph's capture): the
  // decode figure is the steady state after it.
  if (firstStepDone_) {
    ++stats_.decodeForwardCalls;
    stats_.decodeSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  firstStepDone_ = true;
  return s;
}

Status SlotBatch::reorder(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                          const std::vector<int64_t> &shared) {
  std::vector<int32_t> d, s;
  std::vector<int64_t> h;
  for (size_t k = 0; k < dst.size(); ++k)
    if (dst[k] != src[k]) {
      d.push_back(dst[k]);
      s.push_back(src[k]);
      h.push_back(shared.empty() ? 0 : shared[k]);
    }
  if (d.empty())
    return Status::ok();
  return dec_.reorderSlots(d, s, h);
}

void SlotBatch::tokensChosen() {
  ++stats_.decodeSteps;
  if (stats_.firstTokenSeconds < 0)
    stats_.firstTokenSeconds = std::chrono::duration<double>(Clock::now() - start_).count();
}

} // namespace search
} // namespace genrt
