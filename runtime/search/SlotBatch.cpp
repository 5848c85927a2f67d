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
// item only), encodes the sources (encoder-decoder) and returns the chunks
// that prefill every item's prompt into its row 0.
Status SlotBatch::startPrefill(std::vector<Chunk> &chunks) {
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

  chunks.clear();
  chunks.reserve(items_.size());
  for (int64_t i = 0; i < numItems(); ++i) {
    chunks.push_back(Chunk{slot(i, 0), items_[i].decoderPrompt});
    stats_.promptTokens += int64_t(items_[i].decoderPrompt.size());
  }
  ++stats_.forwardCalls;
  return Status::ok();
}

Status SlotBatch::prefill(std::vector<float> &logits) {
  if (Status s = prefillLogits(logits); !s)
    return s;

  // Every row of an item starts from the same prompt cache.
  if (rows_ > 1) {
    std::vector<int32_t> dst, src;
    for (int64_t i = 0; i < numItems(); ++i)
      for (int64_t r = 1; r < rows_; ++r) {
        dst.push_back(slot(i, r));
        src.push_back(slot(i, 0));
      }
    if (Status s = dec_.reorderSlots(dst, src); !s)
      return s;
  }
  return Status::ok();
}

Status SlotBatch::prefillLogits(std::vector<float> &logits) {
  std::vector<Chunk> chunks;
  if (Status s = startPrefill(chunks); !s)
    return s;
  logits.assign(size_t(numItems() * vocab_), 0.f);
  return dec_.forward(chunks, logits.data());
}

Status SlotBatch::prefillGreedy(std::vector<int64_t> &chosen, std::vector<float> &logprobs) {
  if (rows_ != 1)
    return Status::error("prefillGreedy: one row an item");
  std::vector<Chunk> chunks;
  if (Status s = startPrefill(chunks); !s)
    return s;
  chosen.assign(items_.size(), 0);
  logprobs.assign(items_.size(), 0.f);
  return dec_.forwardGreedy(chunks, chosen.data(), logprobs.data());
}

Status SlotBatch::prefillBeams(const std::vector<BeamRow> &rows, int64_t k, std::vector<int32_t> &candTokens,
                               std::vector<float> &candScores) {
  std::vector<Chunk> chunks;
  if (Status s = startPrefill(chunks); !s)
    return s;
  candTokens.assign(rows.size() * size_t(k), 0);
  candScores.assign(rows.size() * size_t(k), 0.f);
  return dec_.forwardBeams(chunks, rows, k, candTokens.data(), candScores.data());
}

Status SlotBatch::step(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                       std::vector<float> &logits) {
  logits.assign(slots.size() * size_t(vocab_), 0.f);
  return timedStep(slots, tokens, [&](const std::vector<Chunk> &chunks) { return dec_.forward(chunks, logits.data()); });
}

Status SlotBatch::stepGreedy(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                             std::vector<int64_t> &chosen, std::vector<float> &logprobs) {
  chosen.assign(slots.size(), 0);
  logprobs.assign(slots.size(), 0.f);
  return timedStep(slots, tokens, [&](const std::vector<Chunk> &chunks) {
    return dec_.forwardGreedy(chunks, chosen.data(), logprobs.data());
  });
}

Status SlotBatch::stepTokens(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                             const std::vector<BeamRow> &rows, const std::vector<double> &draws,
                             const SampleRule &rule, std::vector<int64_t> &chosen, std::vector<float> &logprobs) {
  chosen.assign(slots.size(), 0);
  logprobs.assign(slots.size(), 0.f);
  return timedStep(slots, tokens, [&](const std::vector<Chunk> &chunks) {
    return dec_.forwardTokens(chunks, rows, draws, rule, chosen.data(), logprobs.data());
  });
}

Status SlotBatch::stepBeams(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                            const std::vector<BeamRow> &rows, int64_t k, std::vector<int32_t> &candTokens,
                            std::vector<float> &candScores) {
  candTokens.assign(slots.size() * size_t(k), 0);
  candScores.assign(slots.size() * size_t(k), 0.f);
  return timedStep(slots, tokens, [&](const std::vector<Chunk> &chunks) {
    return dec_.forwardBeams(chunks, rows, k, candTokens.data(), candScores.data());
  });
}

Status SlotBatch::timedStep(const std::vector<int32_t> &slots, const std::vector<int64_t> &tokens,
                            const std::function<Status(const std::vector<Chunk> &)> &forward) {
  if (Status s = stopRequested(obs_); !s)
    return s;
  std::vector<Chunk> chunks;
  chunks.reserve(slots.size());
  for (size_t k = 0; k < slots.size(); ++k)
    chunks.push_back(Chunk{slots[k], {tokens[k]}});
  ++stats_.forwardCalls;
  auto t0 = Clock::now();
  Status s = forward(chunks);
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
