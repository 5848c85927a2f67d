// Greedy search and multinomial sampling (HF's _sample, which does both):
// one row per returned sequence, processors on the raw logits, then the
// warpers when sampling. A finished row (eos) stops and is not run again.
#include "runtime/choice/Greedy.h"
#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/Sampler.h"
#include "runtime/search/SlotBatch.h"

#include <algorithm>

namespace genrt {
namespace search {

namespace {
struct Row {
  std::vector<int64_t> history; // prompt (as processors see it) + generated
  std::vector<int64_t> generated;
  double score = 0;
  bool done = false;
};
} // namespace

Status runGreedyOrSample(SlotBatch &batch, const GenerationConfig &config, const StopRules &stop,
                         std::vector<GenerationResult> &out) {
  // renormalize_logits changes neither a choice nor a score here: HF applies
  // it last (after the warpers), the draw's weights exp(x - max) do not move
  // when every x moves by the row's log-sum-exp, and the score added is the
  // token's log-softmax, which a log-softmaxed row gives back unchanged. So
  // the rows are chosen without it (within rounding of HF's), and the device
  // keeps choosing the tokens where it would copy the logits out to apply
  // it. Beam search keeps it: its ranks add the running scores.
  GenerationConfig cfg = config;
  cfg.renormalizeLogits = false;
  const std::vector<int64_t> &eos = stop.eos;
  const int64_t V = batch.vocab();
  const int64_t R = batch.rowsPerItem();
  const int64_t B = batch.numItems();

  const SampleRule rule = sampleRuleOf(cfg);
  const bool greedyPlain = !cfg.doSample && !cfg.hasLogitsProcessors();
  ChoiceAnswer answer; // each step's: the logits, or the decoder's tokens
  bool haveChosen = false;

  // Greedy with nothing to apply takes its first tokens from the decoder as
  // its steps do (on a GPU, the prompts' logits never cross: 32 prompts'
  // first tokens took 16 ms on the host, H200, 2026-11-28); otherwise from the
  // logits, each row's processors and warpers applied here.
  std::vector<float> &logits = answer.logits;
  if (greedyPlain && R == 1) {
    if (Status s = batch.prefill(ChoiceRequest::greedy(), answer); !s)
      return s;
    haveChosen = true;
  } else {
    if (Status s = batch.prefill(ChoiceRequest::logits(), answer); !s)
      return s;
    if (Status s = batch.copyFirstRow(); !s)
      return s;
  }

  std::vector<Row> rows(static_cast<size_t>(B * R));
  // liveRows[k] is the row whose logits are logits[k * V ..) (or whose token
  // is chosen[k]).
  std::vector<int64_t> liveRows;
  std::vector<float> rowLogits(haveChosen ? 0 : static_cast<size_t>(B * R * V));
  for (int64_t i = 0; i < B; ++i)
    for (int64_t r = 0; r < R; ++r) {
      Row &row = rows[size_t(i * R + r)];
      row.history = batch.item(i).history;
      if (!haveChosen)
        std::copy(logits.begin() + i * V, logits.begin() + (i + 1) * V, rowLogits.begin() + (i * R + r) * V);
      liveRows.push_back(i * R + r);
    }
  logits.swap(rowLogits);

  // What generate() returns for item i: copied for the observer as soon as
  // its rows are done, moved out at the end.
  auto resultOf = [&](int64_t i, bool move) {
    GenerationResult res;
    for (int64_t r = 0; r < R; ++r) {
      Row &row = rows[size_t(i * R + r)];
      res.sequences.push_back(GeneratedSequence{move ? std::move(row.generated) : row.generated, row.score});
    }
    return res;
  };
  GenerationObserver &obs = batch.observer();
  std::vector<int64_t> rowsDone(static_cast<size_t>(B), 0);

  // Greedy with no processor to apply: the decoder chooses each step's
  // tokens itself (on the GPU, where the logits are; elsewhere by the same
  // rule on the host). Greedy with processors that only touch listed
  // tokens, and sampling with temperature / top-k / top-p / min-p: a
  // decoder that chooses where the logits are (the GPU) takes each row's
  // edits (a BeamRow, built here from the history) and its draw, and only
  // the chosen ids come back; the CPU runs the processors and warpers below
  // (the reference). The first token comes from the prefill's logits but
  // for plain greedy (above).
  const bool decoderTokens = !greedyPlain && warpersOnDevice(cfg) &&
                             batch.chooses(ChoiceRequest::tokens({}, {}, rule));
  const bool decoderChooses = greedyPlain || decoderTokens;
  std::vector<BeamRow> rules;
  std::vector<double> draws;

  std::vector<float> scores(V);
  for (int64_t t = 0; t < cfg.maxNewTokens; ++t) {
    std::vector<int32_t> slots;
    std::vector<int64_t> tokens;
    std::vector<int64_t> stillLive;
    for (size_t k = 0; k < liveRows.size(); ++k) {
      Row &row = rows[size_t(liveRows[k])];
      int64_t token;
      if (haveChosen) {
        token = answer.tokens[k];
        row.score += double(answer.logprobs[k]);
      } else {
        std::copy(logits.begin() + k * V, logits.begin() + (k + 1) * V, scores.begin());
        applyLogitsProcessors(scores.data(), V, row.history, encoderIds(batch.item(liveRows[k] / R)), t, cfg, eos);
        if (cfg.doSample) {
          applyWarpers(scores.data(), V, cfg);
          token = sampleToken(scores.data(), V, drawOf(cfg.seed, batch.item(liveRows[k] / R).promptIndex,
                                                       uint64_t(liveRows[k] % R), uint64_t(t)));
          logSoftmax(scores.data(), V);
          row.score += double(scores[token]);
        } else { // the rule the GPU's genc_greedy follows too
          float logprob;
          greedyChoice(scores.data(), V, token, logprob);
          row.score += double(logprob);
        }
      }
      row.history.push_back(token);
      row.generated.push_back(token);
      int64_t item = liveRows[k] / R, r = liveRows[k] % R;
      // A stop string ends the row as eos does (HF: unfinished_sequences).
      bool isEos = std::find(eos.begin(), eos.end(), token) != eos.end() || stop.strings.hits(row.history);
      row.done = isEos || t + 1 == cfg.maxNewTokens;
      obs.onToken(batch.item(item).promptIndex, r, token, row.done);
      if (row.done) {
        obs.onSequence(batch.item(item).promptIndex, r, GeneratedSequence{row.generated, row.score});
        if (++rowsDone[size_t(item)] == R)
          obs.onPromptDone(batch.item(item).promptIndex, resultOf(item, /*move=*/false));
      }
      if (isEos)
        continue;
      slots.push_back(batch.slot(item, r));
      tokens.push_back(token);
      stillLive.push_back(liveRows[k]);
    }
    batch.tokensChosen();
    liveRows.swap(stillLive);
    if (liveRows.empty() || t + 1 == cfg.maxNewTokens)
      break;
    if (decoderTokens) { // each live row's edits for step t + 1 and its draw
      rules.assign(liveRows.size(), BeamRow{});
      draws.assign(liveRows.size(), 0.0);
      for (size_t k = 0; k < liveRows.size(); ++k) {
        const int64_t item = liveRows[k] / R, r = liveRows[k] % R;
        listedTokenRule(rows[size_t(liveRows[k])].history, encoderIds(batch.item(item)), t + 1, cfg, eos, V,
                        rules[k]);
        if (cfg.doSample)
          draws[k] = drawOf(cfg.seed, batch.item(item).promptIndex, uint64_t(r), uint64_t(t + 1));
      }
    }
    const ChoiceRequest request = decoderTokens    ? ChoiceRequest::tokens(std::move(rules), std::move(draws), rule)
                                  : decoderChooses ? ChoiceRequest::greedy()
                                                   : ChoiceRequest::logits();
    Status s = batch.step(slots, tokens, request, answer);
    if (!s)
      return s;
    haveChosen = decoderChooses;
  }

  for (int64_t i = 0; i < B; ++i)
    out.push_back(resultOf(i, /*move=*/true));
  return Status::ok();
}

} // namespace search
} // namespace genrt
