// Greedy search and multinomial sampling (HF's _sample, which does both),
// one prompt's rows as a step-wise search: one row per returned sequence,
// processors on the raw logits, then the warpers when sampling. A finished
// row (eos) stops and is not run again.
#include "runtime/choice/Greedy.h"
#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/RequestSearch.h"
#include "runtime/search/Sampler.h"

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

// renormalize_logits changes neither a choice nor a score here: HF applies
// it last (after the warpers), the draw's weights exp(x - max) do not move
// when every x moves by the row's log-sum-exp, and the score added is the
// token's log-softmax, which a log-softmaxed row gives back unchanged. So
// the rows are chosen without it (within rounding of HF's), and the device
// keeps choosing the tokens where it would copy the logits out to apply
// it. Beam search keeps it: its ranks add the running scores.
GenerationConfig withoutRenormalize(GenerationConfig cfg) {
  cfg.renormalizeLogits = false;
  return cfg;
}

class GreedyOrSample final : public RequestSearch {
public:
  GreedyOrSample(BatchItem item, const GenerationConfig &config, const StopRules &stop, SearchContext ctx)
      : RequestSearch(std::move(item), withoutRenormalize(config), stop, std::move(ctx)),
        rule_(sampleRuleOf(cfg_)), greedyPlain_(!cfg_.doSample && !cfg_.hasLogitsProcessors()),
        wantLogprobs_(ctx_.logprobs.top >= 0) {
    const int64_t R = int64_t(ctx_.slots.size());
    rows_.resize(size_t(R));
    for (Row &row : rows_)
      row.history = item_.history;
    // Greedy with no processor to apply: the decoder chooses each step's
    // tokens itself (on the GPU, where the logits are; elsewhere by the same
    // rule on the host). Greedy with processors that only touch listed
    // tokens, and sampling with temperature / top-k / top-p / min-p: a
    // decoder that chooses where the logits are (the GPU) takes each row's
    // edits (a BeamRow, built here from the history) and its draw, and only
    // the chosen ids come back; the CPU runs the processors and warpers
    // here (the reference). The first token comes from the prefill's
    // logits but for plain greedy. Log-probabilities need the logits.
    decoderTokens_ = !greedyPlain_ && warpersOnDevice(cfg_) && ctx_.decoderChoosesTokens && !wantLogprobs_;
    stepWant_ = wantLogprobs_ ? Want::Logits
                : decoderTokens_ ? Want::Tokens
                : greedyPlain_   ? Want::Greedy
                                 : Want::Logits;
  }

  void addInputs(StepIO &io) override {
    entries_.clear();
    if (!prefilled_) {
      // Plain greedy takes its first tokens from the decoder as its steps
      // do (on a GPU the prompts' logits never cross: 32 prompts' first
      // tokens took 16 ms on the host, H200, 2026-11-28); otherwise from the
      // logits.
      const Want w = greedyPlain_ && rows_.size() == 1 && !wantLogprobs_ ? Want::Greedy : Want::Logits;
      entries_.push_back(io.add(ctx_.slots[0], promptRest(), w));
      return;
    }
    for (int64_t r : live_) {
      const int32_t slot = ctx_.slots[size_t(r)];
      std::vector<int64_t> token{rows_[size_t(r)].history.back()};
      if (stepWant_ != Want::Tokens) {
        entries_.push_back(io.add(slot, std::move(token), stepWant_));
        continue;
      }
      // The row's edits for step t and its draw.
      BeamRow edits;
      listedTokenRule(rows_[size_t(r)].history, encoderIds(item_), t_, cfg_, stop_.eos, ctx_.vocab, edits);
      size_t i = io.addRules(slot, std::move(token), Want::Tokens, &edits, 1);
      io.entries[i].rule = rule_;
      if (cfg_.doSample)
        io.entries[i].draw = drawOf(cfg_.seed, item_.promptIndex, uint64_t(r), uint64_t(t_));
      entries_.push_back(i);
    }
  }

  Status takeOutputs(const StepIO &io) override {
    const int64_t V = ctx_.vocab;
    const bool prompt = !prefilled_;
    std::vector<int64_t> rowsNow;
    if (prompt) {
      for (size_t r = 0; r < rows_.size(); ++r)
        rowsNow.push_back(int64_t(r));
    } else {
      rowsNow = live_;
    }
    prefilled_ = true;
    GenerationObserver &obs = observer();
    std::vector<int64_t> stillLive;
    for (size_t k = 0; k < rowsNow.size(); ++k) {
      const int64_t r = rowsNow[k];
      Row &row = rows_[size_t(r)];
      const StepIO::Entry &e = io.entries[entries_[prompt ? 0 : k]];
      int64_t token;
      if (e.want == Want::Logits) {
        const float *logits = io.logitsOf(entries_[prompt ? 0 : k], V);
        scores_.assign(logits, logits + V);
        if (wantLogprobs_)
          rawLogprobs(logits);
        applyLogitsProcessors(scores_.data(), V, row.history, encoderIds(item_), t_, cfg_, stop_.eos);
        if (cfg_.doSample) {
          applyWarpers(scores_.data(), V, cfg_);
          token = sampleToken(scores_.data(), V, drawOf(cfg_.seed, item_.promptIndex, uint64_t(r), uint64_t(t_)));
          logSoftmax(scores_.data(), V);
          row.score += double(scores_[size_t(token)]);
        } else { // the rule the GPU's genc_greedy follows too
          float logprob;
          greedyChoice(scores_.data(), V, token, logprob);
          row.score += double(logprob);
        }
        if (wantLogprobs_)
          obs.onTokenLogprobs(item_.promptIndex, r, token, raw_[size_t(token)], topOf(raw_));
      } else {
        token = e.token;
        row.score += double(e.logprob);
      }
      row.history.push_back(token);
      row.generated.push_back(token);
      // A stop string ends the row as eos does (HF: unfinished_sequences).
      const bool isEos =
          std::find(stop_.eos.begin(), stop_.eos.end(), token) != stop_.eos.end() || stop_.strings.hits(row.history);
      row.done = isEos || t_ + 1 == cfg_.maxNewTokens;
      if (row.done)
        obs.onStopReason(item_.promptIndex, r, isEos);
      obs.onToken(item_.promptIndex, r, token, row.done);
      if (row.done) {
        obs.onSequence(item_.promptIndex, r, GeneratedSequence{row.generated, row.score});
        if (++rowsDone_ == int64_t(rows_.size()))
          obs.onPromptDone(item_.promptIndex, result(/*move=*/false));
      }
      if (!isEos)
        stillLive.push_back(r);
    }
    live_.swap(stillLive);
    allDone_ = live_.empty() || t_ + 1 == cfg_.maxNewTokens;
    ++t_;
    return Status::ok();
  }

  StopVote vote() const override { return StopVote{allDone_, allDone_, allDone_}; }

  void endStep(bool groupEnds, StepIO &io) override {
    if (allDone_ || groupEnds) {
      finished_ = true;
      return;
    }
    // Every row starts from the prompt's cache (row 0's).
    if (t_ == 1)
      for (int64_t r : live_)
        io.reorder(ctx_.slots[size_t(r)], ctx_.slots[0], 0);
  }

  GenerationResult takeResult() override { return result(/*move=*/true); }

private:
  GenerationResult result(bool move) {
    GenerationResult res;
    for (Row &row : rows_)
      res.sequences.push_back(GeneratedSequence{move ? std::move(row.generated) : row.generated, row.score});
    return res;
  }

  // raw_ := log_softmax of the model's logits.
  void rawLogprobs(const float *logits) {
    raw_.assign(logits, logits + ctx_.vocab);
    logSoftmax(raw_.data(), ctx_.vocab);
  }
  std::vector<std::pair<int64_t, float>> topOf(const std::vector<float> &lp) const {
    const int64_t n = std::min<int64_t>(ctx_.logprobs.top, ctx_.vocab);
    std::vector<std::pair<int64_t, float>> out;
    if (n <= 0)
      return out;
    std::vector<int32_t> tok(size_t(n), 0);
    std::vector<float> sc(size_t(n), 0.f);
    topCandidates(lp.data(), ctx_.vocab, n, tok.data(), sc.data());
    for (int64_t i = 0; i < n; ++i)
      out.emplace_back(tok[size_t(i)], sc[size_t(i)]);
    return out;
  }

  const SampleRule rule_;
  const bool greedyPlain_;
  const bool wantLogprobs_;
  bool decoderTokens_ = false;
  Want stepWant_ = Want::Logits;
  std::vector<Row> rows_;
  std::vector<int64_t> live_;    // rows fed this step, in order
  std::vector<size_t> entries_;  // their chunks in the StepIO
  std::vector<float> scores_, raw_;
  int64_t t_ = 0;                // tokens generated per live row so far
  int64_t rowsDone_ = 0;
  bool allDone_ = false;
};

} // namespace

std::unique_ptr<RequestSearch> makeGreedyOrSample(BatchItem item, const GenerationConfig &cfg,
                                                  const StopRules &stop, SearchContext ctx) {
  return std::make_unique<GreedyOrSample>(std::move(item), cfg, stop, std::move(ctx));
}

} // namespace search
} // namespace genrt
