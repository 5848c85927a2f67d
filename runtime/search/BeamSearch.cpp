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
#include "runtime/search/SlotBatch.h"

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

// Tells the observer an item's result once its finished set is frozen: it
// cannot improve (every later candidate gets HF's -1e9 mask), or it is full
// with early_stopping=True (the same mask), or `end` (the batch stops).
void reportFinal(SlotBatch &batch, std::vector<ItemState> &items, const GenerationConfig &cfg, bool end) {
  for (size_t i = 0; i < items.size(); ++i) {
    ItemState &st = items[i];
    bool frozen = !st.canImprove || (cfg.earlyStopping == EarlyStopping::True && allFinished(st));
    if (st.reported || !(frozen || end))
      continue;
    st.reported = true;
    GenerationResult res = resultOf(st, cfg.numReturnSequences, /*move=*/false);
    size_t prompt = batch.item(int64_t(i)).promptIndex;
    for (size_t n = 0; n < res.sequences.size(); ++n)
      batch.observer().onSequence(prompt, int64_t(n), res.sequences[n]);
    batch.observer().onPromptDone(prompt, res);
  }
}

bool isEos(int64_t token, const std::vector<int64_t> &eos) {
  return std::find(eos.begin(), eos.end(), token) != eos.end();
}

// `x ** length_penalty` as HF computes it (Python float), then used as a
// float32 divisor by torch.
float lengthDivisor(int64_t len, double lengthPenalty) {
  return float(std::pow(double(len), lengthPenalty));
}

} // namespace

Status runBeamSearch(SlotBatch &batch, const GenerationConfig &cfg, const StopRules &stop,
                     std::vector<GenerationResult> &out) {
  const std::vector<int64_t> &eos = stop.eos;
  const int64_t V = batch.vocab();
  const int64_t N = cfg.numBeams;
  const int64_t B = batch.numItems();
  const int64_t K = std::max<int64_t>(2, 1 + int64_t(eos.size())) * N;
  const double lp = cfg.lengthPenalty;
  if (K > N * V)
    return Status::error(cfg.option("num_beams") + " " + std::to_string(N) + " is too large for a vocabulary of " +
                         std::to_string(V) + " tokens (beam search keeps " + std::to_string(K) +
                         " candidates per step)");

  std::vector<ItemState> items(static_cast<size_t>(B));
  for (ItemState &st : items) {
    st.running.assign(size_t(N), {});
    st.runningScore.assign(size_t(N), kMask);
    st.runningScore[0] = 0.f;
    st.cameFrom.assign(size_t(N), 0);
    st.finished.assign(size_t(N), Hyp{});
  }

  // Each row's best K candidates, [B * N, K], ranked by its BeamRow (every
  // processor of a beam search is one) where the logits are: the GPU copies
  // back only these. (K per row, or the whole vocabulary where it is
  // smaller: the item's best K are among its rows' best KR.)
  const int64_t KR = std::min(K, V);
  ChoiceAnswer answer; // a step's candidates (beam search) or logits (beam sampling)
  const std::vector<int32_t> &candToken = answer.candidates;
  const std::vector<float> &candScore = answer.scores;
  std::vector<int64_t> history;
  ChoiceRequest ranking = ChoiceRequest::beams(std::vector<BeamRow>(static_cast<size_t>(B * N)), KR);
  std::vector<BeamRow> &rules = ranking.rules; // a row's rule for the step
  // HF's input_ids of row (i, j): the prompt, then what the beam generated.
  auto historyOf = [&](int64_t i, int64_t j) {
    history = batch.item(i).history;
    const std::vector<int64_t> &gen = items[size_t(i)].running[size_t(j)];
    history.insert(history.end(), gen.begin(), gen.end());
  };
  // The rows' rules for step t (generated = t tokens so far).
  auto makeRules = [&](int64_t t) {
    for (int64_t i = 0; i < B; ++i)
      for (int64_t j = 0; j < N; ++j) {
        BeamRow &r = rules[size_t(i * N + j)];
        historyOf(i, j);
        listedTokenRule(history, encoderIds(batch.item(i)), t, cfg, eos, V, r);
        r.score = items[size_t(i)].runningScore[size_t(j)];
      }
  };
  // Step 0: every beam of an item ranks the prompt's logits, each with its
  // own running score. Only beam 0's slot is prefilled: until the first
  // reorder every beam is the prompt, so that reorder copies from beam 0
  // whatever the parent.
  const bool sample = cfg.doSample;
  const std::vector<float> &logits = answer.logits; // beam sampling: a row per beam (the prompt's: per item)
  if (sample) {
    if (Status s = batch.prefill(ChoiceRequest::logits(), answer); !s)
      return s;
  } else {
    makeRules(0);
    if (Status s = batch.prefill(ranking, answer); !s)
      return s;
  }
  GenerationConfig processors = cfg; // beam sampling: renormalize_logits after the warpers, as HF
  processors.renormalizeLogits = false;
  std::vector<float> acc(static_cast<size_t>(N * V)), drawn(static_cast<size_t>(N * V));
  std::vector<double> us;       // beam sampling: a step's K draws
  std::vector<int64_t> picks;   // and the flat indices they chose
  // Item i's K candidates drawn from softmax(its N x V scores) at step t.
  auto sampleCandidates = [&](int64_t i, int64_t t, std::vector<Candidate> &out) -> Status {
    const ItemState &st = items[size_t(i)];
    for (int64_t j = 0; j < N; ++j) {
      float *row = acc.data() + j * V;
      std::copy_n(logits.data() + (t == 0 ? i : i * N + j) * V, V, row);
      logSoftmax(row, V);
      historyOf(i, j);
      applyLogitsProcessors(row, V, history, encoderIds(batch.item(i)), t, processors, eos);
      applyWarpers(row, V, cfg, eos.empty() ? 2 : int64_t(eos.size()) + 1);
      if (cfg.renormalizeLogits)
        logSoftmax(row, V);
      for (int64_t v = 0; v < V; ++v)
        row[v] = row[v] + st.runningScore[size_t(j)];
    }
    // What HF's float32 softmax gives a probability of 0 is never drawn
    // (the other beams' -1e9 at the prompt's step), whatever is left.
    const float mx = *std::max_element(acc.begin(), acc.end());
    for (size_t f = 0; f < acc.size(); ++f)
      drawn[f] = std::exp(acc[f] - mx) > 0.f ? acc[f] : -std::numeric_limits<float>::infinity();
    // K draws without replacement, each the sampling rule's draw over what
    // is left (drawTokensWithoutReplacement: one exp a score, not 2K).
    us.clear();
    for (int64_t c = 0; c < K; ++c)
      us.push_back(drawOf(cfg.seed, batch.item(i).promptIndex, uint64_t(c), uint64_t(t)));
    drawTokensWithoutReplacement(drawn.data(), N * V, us, picks);
    for (int64_t f : picks) {
      if (f < 0)
        return Status::error("beam sampling: fewer than " + std::to_string(K) +
                             " candidates have a nonzero probability (as in HF, whose multinomial refuses it)");
      out.push_back(Candidate{acc[size_t(f)], f / V, f % V, f});
    }
    std::sort(out.begin(), out.end(), before);
    return Status::ok();
  };

  std::vector<Candidate> cands;
  for (int64_t t = 0;; ++t) {
    bool allHit = true;
    for (int64_t i = 0; i < B; ++i) {
      ItemState &st = items[size_t(i)];
      cands.clear();
      if (sample) {
        if (Status s = sampleCandidates(i, t, cands); !s)
          return s;
      } else {
        for (int64_t j = 0; j < N; ++j)
          for (int64_t n = 0; n < KR; ++n) {
            const int64_t tok = candToken[size_t((i * N + j) * KR + n)];
            cands.push_back(Candidate{candScore[size_t((i * N + j) * KR + n)], j, tok, j * V + tok});
          }
        std::sort(cands.begin(), cands.end(), before);
        cands.resize(size_t(K));
      }

      std::vector<char> hits(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; ++k) {
        hits[k] = isEos(cands[k].token, eos) || t + 1 >= cfg.maxNewTokens ||
                  stop.strings.hits(batch.item(i).history, st.running[size_t(cands[k].beam)], cands[k].token);
        allHit = allHit && hits[k];
      }

      // Finished set first: it reads the running beams before they move.
      bool full = cfg.earlyStopping == EarlyStopping::True && allFinished(st);
      float divisor = lengthDivisor(t + 1, lp);
      std::vector<float> mergedScore(static_cast<size_t>(N + K));
      for (int64_t n = 0; n < N; ++n)
        mergedScore[n] = st.finished[n].score;
      for (int64_t k = 0; k < K; ++k) {
        float f = cands[k].score / divisor;
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
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return mergedScore[a] > mergedScore[b]; });
      std::vector<Hyp> finished(static_cast<size_t>(N));
      for (int64_t n = 0; n < N; ++n) {
        int64_t m = order[n];
        if (m < N) {
          finished[n] = st.finished[m];
        } else {
          const Candidate &c = cands[m - N];
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
        runScore[k] = hits[k] ? cands[k].score + kMask : cands[k].score;
      std::vector<int64_t> korder(static_cast<size_t>(K));
      std::iota(korder.begin(), korder.end(), 0);
      std::stable_sort(korder.begin(), korder.end(),
                       [&](int64_t a, int64_t b) { return runScore[a] > runScore[b]; });
      std::vector<std::vector<int64_t>> running(static_cast<size_t>(N));
      for (int64_t j = 0; j < N; ++j) {
        const Candidate &c = cands[korder[j]];
        running[j] = st.running[c.beam];
        running[j].push_back(c.token);
        st.runningScore[j] = runScore[korder[j]];
        st.cameFrom[j] = c.beam;
      }
      st.running.swap(running);
    }
    batch.tokensChosen();

    // HF's _check_early_stop_heuristic, after cur_len += 1.
    const int64_t generated = t + 1;
    bool anyCanImprove = false, allFull = true;
    for (ItemState &st : items) {
      int64_t bestLen = (cfg.earlyStopping == EarlyStopping::Never && lp > 0) ? cfg.maxNewTokens : generated;
      float bestPossible = st.runningScore[0] / lengthDivisor(bestLen, lp);
      float worstFinished = st.finished[0].score;
      for (const Hyp &h : st.finished)
        worstFinished = std::min(worstFinished, h.score);
      bool beats = false;
      for (const Hyp &h : st.finished)
        beats = beats || bestPossible > (h.finished ? worstFinished : kMask);
      st.canImprove = st.canImprove && beats;
      anyCanImprove = anyCanImprove || st.canImprove;
      for (const Hyp &h : st.finished)
        allFull = allFull && h.finished;
    }
    bool existsOpenBeam = !(allFull && cfg.earlyStopping == EarlyStopping::True);
    bool stop = !anyCanImprove || !existsOpenBeam || allHit;
    reportFinal(batch, items, cfg, stop);
    if (stop)
      break;

    // Move the caches behind the new running beams, then feed their tokens.
    // After the first reorder every beam of an item holds its prompt: only
    // the generated rows move (FastSeq's point: the prompt is the bulk).
    std::vector<int32_t> dst, src, slots;
    std::vector<int64_t> tokens, shared;
    for (int64_t i = 0; i < B; ++i) {
      const ItemState &st = items[size_t(i)];
      for (int64_t j = 0; j < N; ++j) {
        dst.push_back(batch.slot(i, j));
        src.push_back(batch.slot(i, t == 0 ? 0 : st.cameFrom[j]));
        shared.push_back(t == 0 ? 0 : int64_t(batch.item(i).decoderPrompt.size()));
        slots.push_back(batch.slot(i, j));
        tokens.push_back(st.running[j].back());
      }
    }
    if (Status s = batch.reorder(dst, src, shared); !s)
      return s;
    if (sample) {
      if (Status s = batch.step(slots, tokens, ChoiceRequest::logits(), answer); !s)
        return s;
      continue;
    }
    makeRules(t + 1);
    if (Status s = batch.step(slots, tokens, ranking, answer); !s)
      return s;
  }

  for (ItemState &st : items)
    out.push_back(resultOf(st, cfg.numReturnSequences, /*move=*/true));
  return Status::ok();
}

} // namespace search
} // namespace genrt
