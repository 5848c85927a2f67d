#include "runtime/search/Generate.h"
#include "runtime/search/SlotBatch.h"

#include <algorithm>
#include <string>

namespace genrt {

using search::BatchItem;
using search::SlotBatch;

Status validatePrompt(const Prompt &p, const ModelInfo &info, const GenerationConfig &cfg) {
  if (p.inputIds.empty())
    return Status::error("field \"input_ids\": the prompt is empty");
  for (size_t k = 0; k < p.inputIds.size(); ++k) {
    int64_t id = p.inputIds[k];
    if (id < 0 || id >= info.vocabSize)
      return Status::error("field \"input_ids\": element " + std::to_string(k) + " is " + std::to_string(id) +
                           ", outside the vocabulary [0, " + std::to_string(info.vocabSize) + ")");
  }
  int64_t seen = int64_t(p.inputIds.size());
  if (!p.attentionMask.empty()) {
    if (p.attentionMask.size() != p.inputIds.size())
      return Status::error("field \"attention_mask\": has " + std::to_string(p.attentionMask.size()) +
                           " elements but \"input_ids\" has " + std::to_string(p.inputIds.size()));
    seen = 0;
    for (size_t k = 0; k < p.attentionMask.size(); ++k) {
      int64_t m = p.attentionMask[k];
      if (m != 0 && m != 1)
        return Status::error("field \"attention_mask\": element " + std::to_string(k) + " is " +
                             std::to_string(m) + ", expected 0 or 1");
      seen += m;
    }
    if (seen == 0)
      return Status::error("field \"attention_mask\": masks out every token, the prompt is empty");
  }
  // The decoder's cache holds the unmasked prompt (or, for an encoder-decoder,
  // the decoder start token) plus every generated token.
  if (info.encoderDecoder && info.maxSourceLength > 0 && seen > info.maxSourceLength)
    return Status::error("field \"input_ids\": the source has " + std::to_string(seen) +
                         " tokens, more than the plan's maximum source length " +
                         std::to_string(info.maxSourceLength));
  int64_t decoderPromptLen = info.encoderDecoder ? 1 : seen;
  // Compared without adding: --max-new-tokens may be near INT64_MAX.
  if (info.maxLength > 0 && (decoderPromptLen > info.maxLength || cfg.maxNewTokens > info.maxLength - decoderPromptLen))
    return Status::error("the prompt (" + std::to_string(decoderPromptLen) + " tokens) plus " + cfg.option("max_new_tokens") + " " +
                         std::to_string(cfg.maxNewTokens) + " exceeds the plan's maximum length " +
                         std::to_string(info.maxLength));
  return Status::ok();
}

static BatchItem makeItem(const Prompt &p, const ModelInfo &info, uint64_t index) {
  BatchItem item;
  item.promptIndex = index;
  std::vector<int64_t> unmasked;
  for (size_t k = 0; k < p.inputIds.size(); ++k)
    if (p.attentionMask.empty() || p.attentionMask[k] != 0)
      unmasked.push_back(p.inputIds[k]);
  if (info.encoderDecoder) {
    // HF's processors see the decoder's input_ids: the start token onwards.
    item.sourceIds = std::move(unmasked);
    item.decoderPrompt = {info.decoderStartTokenId};
    item.history = item.decoderPrompt;
  } else {
    item.decoderPrompt = std::move(unmasked);
    item.history = p.inputIds;
  }
  return item;
}

Status batchSizeFor(const GenerationConfig &cfg, const ModelInfo &info, int32_t maxSlots, int64_t &batchSize) {
  const int64_t rows = cfg.rowsPerPrompt();
  int64_t maxItems = maxSlots / rows;
  if (info.maxBatch > 0)
    maxItems = std::min(maxItems, info.maxBatch);
  if (maxItems < 1)
    return Status::error("one prompt needs " + std::to_string(rows) + " cache slots (beams or samples) but the plan has " +
                         std::to_string(maxSlots));
  if (cfg.batchSize > maxItems)
    return Status::error(cfg.option("batch_size") + " " + std::to_string(cfg.batchSize) + " needs more than the plan allows: at most " +
                         std::to_string(maxItems) + " prompts of " + std::to_string(rows) +
                         " rows each (max batch " + std::to_string(info.maxBatch) + ", " +
                         std::to_string(maxSlots) + " cache slots)");
  // The rows of a prompt share its cache, each storing only what it generates.
  if (rows > 1 && info.maxBeams > 1 && info.maxNewTokens > 0 && cfg.maxNewTokens > info.maxNewTokens)
    return Status::error(cfg.option("max_new_tokens") + " " + std::to_string(cfg.maxNewTokens) + " exceeds the plan's " +
                         std::to_string(info.maxNewTokens) + ": its " + std::to_string(rows) +
                         " rows a prompt share the prompt's cache and each holds that many tokens of its own "
                         "(genc --max-new-tokens)");
  batchSize = cfg.batchSize > 0 ? cfg.batchSize : maxItems;
  return Status::ok();
}

Status checkGeneration(const ModelInfo &info, int32_t maxSlots, const GenerationConfig &cfg,
                       std::vector<Prompt> prompts, CheckedGeneration &out, const std::vector<std::string> *names) {
  if (info.vocabSize <= 0)
    return Status::error("the model reports no vocabulary");
  if (Status s = cfg.validateFor(info); !s)
    return s;
  for (size_t n = 0; n < prompts.size(); ++n)
    if (Status s = validatePrompt(prompts[n], info, cfg); !s)
      return Status::error((names && n < names->size() ? (*names)[n] : "prompt " + std::to_string(n)) + ": " +
                           s.message());
  if (Status s = batchSizeFor(cfg, info, maxSlots, out.batchSize_); !s)
    return s;
  if (!cfg.stopStrings.empty() && cfg.tokenizer)
    if (Status s = search::StopStrings::check(cfg.stopStrings, *cfg.tokenizer); !s)
      return s;
  out.cfg_ = cfg;
  out.prompts_ = std::move(prompts);
  return Status::ok();
}

static Status generateAll(Decoder &decoder, const CheckedGeneration &request, int64_t batchSize,
                          std::vector<GenerationResult> &results, GenerationStats *statsOut,
                          GenerationObserver *observer) {
  GenerationObserver silent;
  auto start = SlotBatch::Clock::now();
  const ModelInfo &info = decoder.info();
  const GenerationConfig &cfg = request.config();
  const std::vector<Prompt> &prompts = request.prompts();
  const int64_t rows = cfg.rowsPerPrompt();
  const search::StopRules stop{cfg.effectiveEos(info), search::StopStrings(cfg.stopStrings, cfg.tokenizer)};

  GenerationStats stats;
  stats.firstTokenSeconds = -1; // not yet
  const bool keep = !observer || observer->keepResults();
  std::vector<GenerationResult> out;
  if (keep)
    out.reserve(prompts.size());
  for (size_t first = 0; first < prompts.size(); first += size_t(batchSize)) {
    size_t last = std::min(prompts.size(), first + size_t(batchSize));
    std::vector<BatchItem> items;
    for (size_t n = first; n < last; ++n)
      items.push_back(makeItem(prompts[n], info, n));
    SlotBatch batch(decoder, std::move(items), rows, stats, start, observer ? *observer : silent);
    ++stats.batches;
    const size_t before = out.size();
    Status s = cfg.numBeams > 1 ? search::runBeamSearch(batch, cfg, stop, out)
                                : search::runGreedyOrSample(batch, cfg, stop, out);
    if (!s)
      return s;
    for (size_t n = before; n < out.size(); ++n)
      for (const GeneratedSequence &seq : out[n].sequences)
        stats.generatedTokens += int64_t(seq.outputIds.size());
    if (!keep)
      out.clear(); // the observer has had them all (onPromptDone)
  }
  stats.totalSeconds = std::chrono::duration<double>(SlotBatch::Clock::now() - start).count();
  if (stats.firstTokenSeconds < 0)
    stats.firstTokenSeconds = 0;
  if (statsOut)
    *statsOut = stats;
  results = std::move(out);
  return Status::ok();
}

// The API edge: an allocation failure anywhere in the search is a Status.
Status generate(Decoder &decoder, const CheckedGeneration &request, std::vector<GenerationResult> &results,
                GenerationStats *statsOut, GenerationObserver *observer) {
  return statusOnOutOfMemory("while generating", [&] {
    return generateAll(decoder, request, request.batchSize(), results, statsOut, observer);
  });
}

Status generate(Decoder &decoder, const GenerationConfig &cfg, const std::vector<Prompt> &prompts,
                std::vector<GenerationResult> &results, GenerationStats *statsOut,
                GenerationObserver *observer) {
  return statusOnOutOfMemory("while generating", [&] {
    CheckedGeneration request;
    if (Status s = checkGeneration(decoder.info(), decoder.maxSlots(), cfg, prompts, request); !s)
      return s;
    return generateAll(decoder, request, request.batchSize(), results, statsOut, observer);
  });
}

} // namespace genrt
