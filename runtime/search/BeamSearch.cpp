// Beam search exactly as Hugging Face's vectorized `_beam_search`
// (transformers 5.x), one item at a time where HF works on tensors:
//
// - scores: log_softmax(logits), then the logits processors, plus the
//   running beam score; all float32 as in torch. Running scores start at
//   [0, -1e9, ...] so the first step expands beam 0 only.
// - top K = max(2, 1 + #eos) * num_beams candidates over beams * vocab.
// - a candidate "hits the stopping criteria" if its token is an eos id, it
//   reaches max_new_tokens or it completes a stop string. Only hits among the first num_beams candidates
//   finish, with score logprob / generated_len ** length_penalty.
// - the next running beams are the best num_beams candidates after hits get
//   -1e9; the finished set is the best num_beams of (old finished + new
//   finished candidates), with -1e9 masks for items that are full
//   (early_stopping=True) or can no longer improve.
// - the batch stops when no item can improve, or every item is full with
//   early_stopping=True, or every candidate hit the stopping criteria.
//
// Ties are broken towards the lower index, which is what torch.topk does on
// the CPU in practice (it does not promise it).
//
// Beam sampling (do_sample): the K candidates are drawn without replacement
// from the softmax of an item's flattened scores (HF's torch.multinomial in
// _get_top_k_continuations), the scores being the log-softmax, the
// processors, the warpers and then renormalize_logits (HF appends it last),
// + the running score; then sorted by score. Draw c of item i at step t is
// u(seed, prompt, c, t) through the sampling rule (runtime/search/Sampler.h):
// HF's distribution, not torch's numbers. On the host, from the logits.
#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/Sampler.h"
#include "runtime/search/RequestSearch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace genrt {
namespace search {

namespace {

// HF's mask value for "not a candidate": added, not assigned, so masked
// scores keep their order among themselves exactly as in torch.
constexpr float kMask = -1.0e9f;

struct Candidate {
  float score;
  int64_t beam;
  int64_t token;
  int64_t flat; // beam * vocab + token: torch.topk's index
};

bool before(const Candidate &a, const Candidate &b) {
  return a.score > b.score || (a.score == b.score && a.flat < b.flat);
}

struct Hyp {
  std::vector<int64_t> tokens; // generated tokens, eos included
  float score = kMask;
  bool finished = false; // HF's is_sent_finished for this slot
};

struct ItemState {
  std::vector<std::vector<int64_t>> running; // generated tokens per running beam
  std::vector<float> runningScore;           // best first after the first step
  std::vector<int64_t> cameFrom;             // beam each running beam extends (this step)
  std::vector<Hyp> finished;                 // best first
  bool canImprove = true;                    // HF's is_early_stop_heuristic_unsatisfied
  bool reported = false;                     // its result went to the observer
};

bool allFinished(const ItemState &st) {
  return std::all_of(st.finished.begin(), st.finished.end(), [](const Hyp &h) { return h.finished; });
}

// What generate() returns for one item: the best num_return_sequences.
GenerationResult resultOf(ItemState &st, int64_t count, bool move) {
  GenerationResult res;
  for (int64_t n = 0; n < count; ++n) {
    Hyp &h = st.finished[size_t(n)];
    res.sequences.push_back(GeneratedSequence{move ? std::move(h.tokens) : h.tokens, h.score});
  }
  return res;
}

bool isEos(int64_t token, const std::vector<int64_t> &eos) {
  return std::find(eos.begin(), eos.end(), token) != eos.end();
}

// `x ** length_penalty` as HF computes it (Python float), then used as a
// float32 divisor by torch.
float lengthDivisor(int64_t len, double lengthPenalty) {
  return float(std::pow(double(len), lengthPenalty));
}


class BeamSearch final : public RequestSearch {
public:
  BeamSearch(BatchItem item, const GenerationConfig &cfg, const StopRules &stop, SearchContext ctx, int64_t K)
      : RequestSearch(std::move(item), cfg, stop, std::move(ctx)), N_(cfg.numBeams), K_(K),
        KR_(std::min(K, ctx_.vocab)) {
    st_.running.assign(size_t(N_), {});
    st_.runningScore.assign(size_t(N_), kMask);
    st_.runningScore[0] = 0.f;
    st_.cameFrom.assign(size_t(N_), 0);
    st_.finished.assign(size_t(N_), Hyp{});
    processors_ = cfg_; // beam sampling: renormalize_logits after the warpers, as HF
    processors_.renormalizeLogits = false;
  }

  // Step 0: every beam ranks the prompt's logits, each with its own running
  // score. Only beam 0's slot is prefilled: until the first reorder every
  // beam is the prompt, so that reorder copies from beam 0 whatever the
  // parent. Each row's best K candidates are ranked by its BeamRow (every
  // processor of a beam search is one) where the logits are: the GPU copies
  // back only these (K per row, or the whole vocabulary where it is
  // smaller: the item's best K are among its rows' best KR).
  void addInputs(StepIO &io) override {
    entries_.clear();
    const bool sample = cfg_.doSample;
    if (!prefilled_) {
      if (sample) {
        entries_.push_back(io.add(ctx_.slots[0], promptRest(), Want::Logits));
        return;
      }
      makeRules(0);
      size_t i = io.addRules(ctx_.slots[0], promptRest(), Want::Beams, rules_.data(), int32_t(N_));
      io.entries[i].k = KR_;
      entries_.push_back(i);
      return;
    }
    if (!sample)
      makeRules(t_);
    for (int64_t j = 0; j < N_; ++j) {
      std::vector<int64_t> token{st_.running[size_t(j)].back()};
      if (sample) {
        entries_.push_back(io.add(ctx_.slots[size_t(j)], std::move(token), Want::Logits));
        continue;
      }
      size_t i = io.addRules(ctx_.slots[size_t(j)], std::move(token), Want::Beams, &rules_[size_t(j)], 1);
      io.entries[i].k = KR_;
      entries_.push_back(i);
    }
  }

  Status takeOutputs(const StepIO &io) override {
    const int64_t V = ctx_.vocab, N = N_, K = K_, t = t_;
    const bool prompt = !prefilled_;
    prefilled_ = true;
    ItemState &st = st_;
    cands_.clear();
    if (cfg_.doSample) {
      if (Status s = sampleCandidates(io, prompt); !s)
        return s;
    } else {
      for (int64_t j = 0; j < N; ++j) {
        // The prompt's chunk holds every beam's rule; a step's, one each.
        const StepIO::Entry &e = io.entries[entries_[prompt ? 0 : size_t(j)]];
        const int64_t first = e.firstCand + (prompt ? j * KR_ : 0);
        for (int64_t n = 0; n < KR_; ++n) {
          const int64_t tok = io.candTokens[size_t(first + n)];
          cands_.push_back(Candidate{io.candScores[size_t(first + n)], j, tok, j * V + tok});
        }
      }
      std::sort(cands_.begin(), cands_.end(), before);
      cands_.resize(size_t(K));
    }

    std::vector<char> hits(static_cast<size_t>(K));
    allHit_ = true;
    for (int64_t k = 0; k < K; ++k) {
      hits[k] = isEos(cands_[k].token, stop_.eos) || t + 1 >= cfg_.maxNewTokens ||
                stop_.strings.hits(item_.history, st.running[size_t(cands_[k].beam)], cands_[k].token);
      allHit_ = allHit_ && hits[k];
    }

    // Finished set first: it reads the running beams before they move.
    bool full = cfg_.earlyStopping == EarlyStopping::True && allFinished(st);
    float divisor = lengthDivisor(t + 1, cfg_.lengthPenalty);
    std::vector<float> mergedScore(static_cast<size_t>(N + K));
    for (int64_t n = 0; n < N; ++n)
      mergedScore[n] = st.finished[n].score;
    for (int64_t k = 0; k < K; ++k) {
      float f = cands_[k].score / divisor;
      if (full)
        f += kMask;
      if (!st.canImprove)
        f += kMask;
      if (!(hits[k] && k < N))
        f += kMask;
      mergedScore[N + k] = f;
    }
    std::vector<int64_t> order(static_cast<size_t>(N + K));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return mergedScore[a] > mergedScore[b]; });
    std::vector<Hyp> finished(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      int64_t m = order[n];
      if (m < N) {
        finished[n] = st.finished[m];
      } else {
        const Candidate &c = cands_[m - N];
        finished[n].tokens = st.running[c.beam];
        finished[n].tokens.push_back(c.token);
        finished[n].score = mergedScore[m];
        finished[n].finished = hits[m - N] && (m - N) < N;
      }
    }
    st.finished.swap(finished);

    // Next running beams: the best N candidates once hits are masked.
    std::vector<float> runScore(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k)
      runScore[k] = hits[k] ? cands_[k].score + kMask : cands_[k].score;
    std::vector<int64_t> korder(static_cast<size_t>(K));
    std::iota(korder.begin(), korder.end(), 0);
    std::stable_sort(korder.begin(), korder.end(), [&](int64_t a, int64_t b) { return runScore[a] > runScore[b]; });
    std::vector<std::vector<int64_t>> running(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) {
      const Candidate &c = cands_[korder[j]];
      running[j] = st.running[c.beam];
      running[j].push_back(c.token);
      st.runningScore[j] = runScore[korder[j]];
      st.cameFrom[j] = c.beam;
    }
    st.running.swap(running);

    // HF's _check_early_stop_heuristic, after cur_len += 1.
    const int64_t generated = t + 1;
    const double lp = cfg_.lengthPenalty;
    int64_t bestLen = (cfg_.earlyStopping == EarlyStopping::Never && lp > 0) ? cfg_.maxNewTokens : generated;
    float bestPossible = st.runningScore[0] / lengthDivisor(bestLen, lp);
    float worstFinished = st.finished[0].score;
    for (const Hyp &h : st.finished)
      worstFinished = std::min(worstFinished, h.score);
    bool beats = false;
    for (const Hyp &h : st.finished)
      beats = beats || bestPossible > (h.finished ? worstFinished : kMask);
    st.canImprove = st.canImprove && beats;
    ++t_;
    return Status::ok();
  }

  StopVote vote() const override {
    return StopVote{!st_.canImprove, cfg_.earlyStopping == EarlyStopping::True && allFinished(st_), allHit_};
  }

  // Tells the observer the result once the finished set is frozen: it
  // cannot improve (every later candidate gets HF's -1e9 mask), or it is
  // full with early_stopping=True (the same mask), or the group stops.
  // Then, unless the group stops, moves the caches behind the new running
  // beams: after the first reorder every beam holds the prompt, and only
  // the generated rows move (FastSeq's point: the prompt is the bulk).
  void endStep(bool groupEnds, StepIO &io) override {
    const bool frozen = !st_.canImprove || (cfg_.earlyStopping == EarlyStopping::True && allFinished(st_));
    if (!st_.reported && (frozen || groupEnds)) {
      st_.reported = true;
      GenerationResult res = resultOf(st_, cfg_.numReturnSequences, /*move=*/false);
      for (size_t n = 0; n < res.sequences.size(); ++n)
        observer().onSequence(item_.promptIndex, int64_t(n), res.sequences[n]);
      observer().onPromptDone(item_.promptIndex, res);
    }
    if (groupEnds) {
      finished_ = true;
      return;
    }
    const int64_t t = t_ - 1; // the step just taken
    for (int64_t j = 0; j < N_; ++j)
      io.reorder(ctx_.slots[size_t(j)], ctx_.slots[size_t(t == 0 ? 0 : st_.cameFrom[size_t(j)])],
                 t == 0 ? 0 : int64_t(item_.decoderPrompt.size()));
  }

  GenerationResult takeResult() override { return resultOf(st_, cfg_.numReturnSequences, /*move=*/true); }

private:
  // HF's input_ids of beam j: the prompt, then what the beam generated.
  void historyOf(int64_t j) {
    history_ = item_.history;
    const std::vector<int64_t> &gen = st_.running[size_t(j)];
    history_.insert(history_.end(), gen.begin(), gen.end());
  }
  // The beams' rules for step t (generated = t tokens so far).
  void makeRules(int64_t t) {
    rules_.assign(size_t(N_), BeamRow{});
    for (int64_t j = 0; j < N_; ++j) {
      historyOf(j);
      listedTokenRule(history_, encoderIds(item_), t, cfg_, stop_.eos, ctx_.vocab, rules_[size_t(j)]);
      rules_[size_t(j)].score = st_.runningScore[size_t(j)];
    }
  }

  // Beam sampling: K candidates drawn from softmax(the N x V scores) at
  // step t (the prompt's step: every beam from the prompt's logits).
  Status sampleCandidates(const StepIO &io, bool prompt) {
    const int64_t V = ctx_.vocab, N = N_, K = K_, t = t_;
    acc_.resize(size_t(N * V));
    drawn_.resize(size_t(N * V));
    const std::vector<int64_t> &eos = stop_.eos;
    for (int64_t j = 0; j < N; ++j) {
      float *row = acc_.data() + j * V;
      std::copy_n(io.logitsOf(entries_[prompt ? 0 : size_t(j)], V), V, row);
      logSoftmax(row, V);
      historyOf(j);
      applyLogitsProcessors(row, V, history_, encoderIds(item_), t, processors_, eos);
      applyWarpers(row, V, cfg_, eos.empty() ? 2 : int64_t(eos.size()) + 1);
      if (cfg_.renormalizeLogits)
        logSoftmax(row, V);
      for (int64_t v = 0; v < V; ++v)
        row[v] = row[v] + st_.runningScore[size_t(j)];
    }
    // What HF's float32 softmax gives a probability of 0 is never drawn
    // (the other beams' -1e9 at the prompt's step), whatever is left.
    const float mx = *std::max_element(acc_.begin(), acc_.end());
    for (size_t f = 0; f < acc_.size(); ++f)
      drawn_[f] = std::exp(acc_[f] - mx) > 0.f ? acc_[f] : -std::numeric_limits<float>::infinity();
    // K draws without replacement, each the sampling rule's draw over what
    // is left (drawTokensWithoutReplacement: one exp a score, not 2K).
    us_.clear();
    for (int64_t c = 0; c < K; ++c)
      us_.push_back(drawOf(cfg_.seed, item_.promptIndex, uint64_t(c), uint64_t(t)));
    drawTokensWithoutReplacement(drawn_.data(), N * V, us_, picks_);
    for (int64_t f : picks_) {
      if (f < 0)
        return Status::error("beam sampling: fewer than " + std::to_string(K) +
                             " candidates have a nonzero probability (as in HF, whose multinomial refuses it)");
      cands_.push_back(Candidate{acc_[size_t(f)], f / V, f % V, f});
    }
    std::sort(cands_.begin(), cands_.end(), before);
    return Status::ok();
  }

  const int64_t N_, K_, KR_;
  GenerationConfig processors_;
  ItemState st_;
  int64_t t_ = 0;
  bool allHit_ = false;
  std::vector<size_t> entries_;
  std::vector<BeamRow> rules_;
  std::vector<int64_t> history_;
  std::vector<Candidate> cands_;
  std::vector<float> acc_, drawn_; // beam sampling's scratch
  std::vector<double> us_;
  std::vector<int64_t> picks_;
};

} // namespace

Status makeBeamSearch(BatchItem item, const GenerationConfig &cfg, const StopRules &stop, SearchContext ctx,
                      std::unique_ptr<RequestSearch> &out) {
  const int64_t V = ctx.vocab, N = cfg.numBeams;
  const int64_t K = std::max<int64_t>(2, 1 + int64_t(stop.eos.size())) * N;
  if (K > N * V)
    return Status::error(cfg.option("num_beams") + " " + std::to_string(N) + " is too large for a vocabulary of " +
                         std::to_string(V) + " tokens (beam search keeps " + std::to_string(K) +
                         " candidates per step)");
  out = std::make_unique<BeamSearch>(std::move(item), cfg, stop, std::move(ctx), K);
  return Status::ok();
}

} // namespace search
} // namespace genrt
