// generate(): prompts in batches, each batch's requests stepped in
// lockstep through one forward a step (HF's batched generate), over the
// same per-request searches the server's scheduler runs.
#include "runtime/search/Generate.h"
#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/RequestSearch.h"

#include <algorithm>
#include <chrono>
#include <string>


namespace genrt {

using search::BatchItem;
using Clock = std::chrono::steady_clock;

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

search::BatchItem search::makeBatchItem(const Prompt &p, const ModelInfo &info, uint64_t index) {
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

namespace {

// Item i, row r of a batch lives in slot i * rows + r. Every slot of the
// decoder is emptied first (a batch owns the decoder while it runs; a slot
// left over from an earlier batch of more rows a prompt would still hold
// the prompt it shared, and a plan with shared prompts has a home per
// batch item only), the sources encoded (encoder-decoder), then every
// item's prompt prefilled in one packed forward into its row 0, then one
// token a live row a step.
Status runBatch(Decoder &decoder, const GenerationConfig &cfg, const search::StopRules &stop,
                std::vector<BatchItem> items, GenerationStats &stats, Clock::time_point start,
                GenerationObserver &obs, std::vector<GenerationResult> &out) {
  const int64_t rows = cfg.rowsPerPrompt();
  std::vector<int32_t> all;
  for (int32_t s = 0; s < decoder.maxSlots(); ++s)
    all.push_back(s);
  // Asked before each forward call: the only places where a stop can wait
  // long, and where nothing half-done has to be undone.
  auto stopRequested = [&] { return obs.shouldStop() ? Status::error("generation stopped") : Status::ok(); };
  if (Status s = stopRequested(); !s)
    return s;
  search::resetSlots(decoder, all);

  std::vector<std::unique_ptr<search::RequestSearch>> searches;
  std::vector<std::vector<int64_t>> sources;
  std::vector<std::vector<int32_t>> sourceSlots;
  const bool choosesTokens = search::decoderChoosesTokens(decoder, search::sampleRuleOf(cfg));
  for (size_t i = 0; i < items.size(); ++i) {
    search::SearchContext ctx;
    ctx.vocab = decoder.info().vocabSize;
    ctx.observer = &obs;
    ctx.decoderChoosesTokens = choosesTokens;
    for (int64_t r = 0; r < rows; ++r)
      ctx.slots.push_back(int32_t(int64_t(i) * rows + r));
    stats.promptTokens += int64_t(items[i].decoderPrompt.size());
    if (decoder.info().encoderDecoder) {
      sources.push_back(items[i].sourceIds);
      sourceSlots.push_back(ctx.slots);
    }
    std::unique_ptr<search::RequestSearch> rs;
    if (Status s = search::makeSearch(std::move(items[i]), cfg, stop, std::move(ctx), rs); !s)
      return s;
    searches.push_back(std::move(rs));
  }
  if (!sources.empty()) // every source, packed into as few @encode runs as fit
    if (Status s = search::encodeSources(decoder, sources, sourceSlots); !s)
      return s;

  search::StepIO io;
  std::vector<search::StopVote> votes(searches.size());
  for (int64_t step = 0;; ++step) {
    io.clearChunks();
    for (auto &rs : searches)
      if (!rs->finished())
        rs->addInputs(io);
    if (Status s = stopRequested(); !s)
      return s;
    ++stats.forwardCalls;
    auto t0 = Clock::now();
    if (Status s = search::runStep(decoder, io); !s)
      return s;
    // A batch's first step after its prefill pays one-time costs (a CUDA
    // graph's capture): the decode figure is the steady state after it.
    if (step >= 2) {
      ++stats.decodeForwardCalls;
      stats.decodeSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    for (size_t i = 0; i < searches.size(); ++i)
      if (!searches[i]->finished()) {
        if (Status s = searches[i]->takeOutputs(io); !s)
          return s;
        votes[i] = searches[i]->vote();
      }
    ++stats.decodeSteps;
    if (stats.firstTokenSeconds < 0)
      stats.firstTokenSeconds = std::chrono::duration<double>(Clock::now() - start).count();
    const bool ends = search::groupStops(votes);
    bool any = false;
    for (auto &rs : searches)
      if (!rs->finished()) {
        rs->endStep(ends, io);
        any = any || !rs->finished();
      }
    if (!any)
      break;
  }
  for (auto &rs : searches)
    out.push_back(rs->takeResult());
  return Status::ok();
}

} // namespace

static Status generateAll(Decoder &decoder, const CheckedGeneration &request, int64_t batchSize,
                          std::vector<GenerationResult> &results, GenerationStats *statsOut,
                          GenerationObserver *observer) {
  GenerationObserver silent;
  auto start = Clock::now();
  const ModelInfo &info = decoder.info();
  const GenerationConfig &cfg = request.config();
  const std::vector<Prompt> &prompts = request.prompts();
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
      items.push_back(search::makeBatchItem(prompts[n], info, n));
    ++stats.batches;
    const size_t before = out.size();
    Status s = runBatch(decoder, cfg, stop, std::move(items), stats, start, observer ? *observer : silent, out);
    if (!s)
      return s;
    for (size_t n = before; n < out.size(); ++n)
      for (const GeneratedSequence &seq : out[n].sequences)
        stats.generatedTokens += int64_t(seq.outputIds.size());
    if (!keep)
      out.clear(); // the observer has had them all (onPromptDone)
  }
  stats.totalSeconds = std::chrono::duration<double>(Clock::now() - start).count();
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
