// Reference generation for the search tests, written apart from
// runtime/search and on purpose in the shape of Hugging Face's code
// (transformers 5.x `_beam_search`, `_sample`, the logits processors): flat
// [batch, beams, ...] arrays, full sorts for torch.topk, gathers. No caches:
// every step recomputes the logits of each full sequence with fakeLogits.
// The production code works per item with caches and partial selection; the
// two agreeing is the test.
#pragma once
#include "FakeDecoder.h"
#include "runtime/search/GenerationConfig.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

namespace ref {

using fake::FakeModel;
using genrt::EarlyStopping;
using genrt::GenerationConfig;

struct Input {
  std::vector<int64_t> inputIds;    // HF's input_ids row (padded prompt / decoder start)
  std::vector<int64_t> modelPrompt; // what the model attends to (unpadded)
  std::vector<int64_t> source;      // encoder input, empty for decoder-only
};

struct Output {
  std::vector<std::vector<int64_t>> sequences; // generated tokens
  std::vector<float> scores;
};

struct Run {
  std::vector<Output> items;
  int modelCalls = 0; // iterations of HF's while loop (forward passes)
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// torch.log_softmax on a float32 row.
inline void logSoftmax(std::vector<float> &x) {
  float mx = *std::max_element(x.begin(), x.end());
  double s = 0;
  for (float v : x)
    s += std::exp(double(v - mx));
  float l = float(std::log(s));
  for (float &v : x)
    v = (v - mx) - l;
}

// HF's LogitsProcessorList for the options the tests use, in HF's order.
inline void processors(std::vector<float> &scores, const std::vector<int64_t> &inputIds, size_t promptLen,
                       const GenerationConfig &cfg, const std::vector<int64_t> &eos) {
  if (cfg.repetitionPenalty != 1.0) {
    // score = gather(scores, input_ids); where(score < 0, score * p, score / p); scatter
    float p = float(cfg.repetitionPenalty);
    std::vector<float> gathered;
    for (int64_t id : inputIds)
      gathered.push_back(scores[id] < 0 ? scores[id] * p : scores[id] / p);
    for (size_t i = 0; i < inputIds.size(); ++i)
      scores[inputIds[i]] = gathered[i];
  }
  if (cfg.noRepeatNgramSize > 0) {
    size_t n = size_t(cfg.noRepeatNgramSize), curLen = inputIds.size();
    if (curLen + 1 >= n) {
      // _get_ngrams: prefix tuple -> next tokens
      std::map<std::vector<int64_t>, std::vector<int64_t>> ngrams;
      for (size_t i = 0; i + n <= curLen; ++i) {
        std::vector<int64_t> prefix(inputIds.begin() + i, inputIds.begin() + i + n - 1);
        ngrams[prefix].push_back(inputIds[i + n - 1]);
      }
      std::vector<int64_t> key(inputIds.begin() + (curLen + 1 - n), inputIds.end());
      auto it = ngrams.find(key);
      if (it != ngrams.end())
        for (int64_t t : it->second)
          scores[t] = kNegInf;
    }
  }
  if (cfg.minNewTokens > 0 && inputIds.size() - promptLen < size_t(cfg.minNewTokens))
    for (int64_t e : eos)
      scores[e] = kNegInf;
}

inline bool contains(const std::vector<int64_t> &v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// Greedy search: rows are independent, each stops at eos.
inline Run greedy(const FakeModel &m, const std::vector<Input> &batch, const GenerationConfig &cfg,
                  const std::vector<int64_t> &eos) {
  Run run;
  std::vector<std::vector<int64_t>> gen(batch.size());
  std::vector<double> score(batch.size(), 0);
  std::vector<bool> done(batch.size(), false);
  for (int64_t step = 0; step < cfg.maxNewTokens; ++step) {
    bool any = false;
    for (size_t b = 0; b < batch.size(); ++b)
      any = any || !done[b];
    if (!any)
      break;
    ++run.modelCalls;
    for (size_t b = 0; b < batch.size(); ++b) {
      if (done[b])
        continue;
      std::vector<int64_t> seq = batch[b].modelPrompt;
      seq.insert(seq.end(), gen[b].begin(), gen[b].end());
      std::vector<float> logits(m.vocab);
      fake::fakeLogits(m, batch[b].source, seq, logits.data());
      std::vector<int64_t> ids = batch[b].inputIds;
      ids.insert(ids.end(), gen[b].begin(), gen[b].end());
      processors(logits, ids, batch[b].inputIds.size(), cfg, eos);
      int64_t tok = std::max_element(logits.begin(), logits.end()) - logits.begin(); // first max
      logSoftmax(logits);
      score[b] += logits[tok];
      gen[b].push_back(tok);
      if (contains(eos, tok))
        done[b] = true;
    }
  }
  for (size_t b = 0; b < batch.size(); ++b)
    run.items.push_back(Output{{gen[b]}, {float(score[b])}});
  return run;
}

// torch.topk(x, k) indices, largest first; ties to the lower index.
inline std::vector<int64_t> topk(const std::vector<float> &x, int64_t k) {
  std::vector<int64_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return x[a] > x[b]; });
  idx.resize(size_t(k));
  return idx;
}

/// HF `_beam_search`, a literal port.
inline Run beamSearch(const FakeModel &m, const std::vector<Input> &batch, const GenerationConfig &cfg,
                      const std::vector<int64_t> &eos) {
  const int64_t B = int64_t(batch.size()), N = cfg.numBeams, V = m.vocab, maxNew = cfg.maxNewTokens;
  const int64_t K = std::max<int64_t>(2, 1 + int64_t(eos.size())) * N;
  const double lp = cfg.lengthPenalty;
  const bool esTrue = cfg.earlyStopping == EarlyStopping::True;
  const bool esNever = cfg.earlyStopping == EarlyStopping::Never;
  const int64_t pad = 0;

  // [B][N][maxNew] generated-token buffers, like running_sequences after the prompt.
  auto at = [&](int64_t b, int64_t n, int64_t t) { return size_t((b * N + n) * maxNew + t); };
  std::vector<int64_t> running(size_t(B * N * maxNew), pad), sequences(size_t(B * N * maxNew), pad);
  std::vector<int64_t> seqLen(size_t(B * N), 0);
  std::vector<float> runningScores(size_t(B * N), 0.f), beamScores(size_t(B * N), -1.0e9f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 1; n < N; ++n)
      runningScores[b * N + n] = -1.0e9f;
  std::vector<char> isSentFinished(size_t(B * N), 0);
  std::vector<char> unsatisfied(size_t(B), 1);

  Run run;
  int64_t cur = 0; // generated so far (cur_len - decoder_prompt_len)
  bool peerFinished = false;
  while (!peerFinished) {
    ++run.modelCalls;
    std::vector<std::vector<float>> acc(size_t(B), std::vector<float>(size_t(N * V)));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < N; ++n) {
        std::vector<int64_t> seq = batch[b].modelPrompt, ids = batch[b].inputIds;
        for (int64_t t = 0; t < cur; ++t) {
          seq.push_back(running[at(b, n, t)]);
          ids.push_back(running[at(b, n, t)]);
        }
        std::vector<float> lp_(static_cast<size_t>(V));
        fake::fakeLogits(m, batch[b].source, seq, lp_.data());
        logSoftmax(lp_);
        processors(lp_, ids, batch[b].inputIds.size(), cfg, eos);
        for (int64_t v = 0; v < V; ++v)
          acc[b][n * V + v] = lp_[v] + runningScores[b * N + n];
      }

    // _get_top_k_continuations
    std::vector<float> topkLogProbs(static_cast<size_t>(B * K));
    std::vector<int64_t> topkSeq(static_cast<size_t>(B * K * maxNew));
    std::vector<char> hits(static_cast<size_t>(B * K));
    for (int64_t b = 0; b < B; ++b) {
      std::vector<int64_t> idx = topk(acc[b], K);
      for (int64_t k = 0; k < K; ++k) {
        int64_t beam = idx[k] / V, tok = idx[k] % V;
        topkLogProbs[b * K + k] = acc[b][idx[k]];
        for (int64_t t = 0; t < cur; ++t)
          topkSeq[(b * K + k) * maxNew + t] = running[at(b, beam, t)];
        topkSeq[(b * K + k) * maxNew + cur] = tok;
        // stopping criteria: MaxLengthCriteria, EosTokenCriteria
        hits[b * K + k] = (cur + 1 >= maxNew) || contains(eos, tok);
      }
    }

    // _get_running_beams_for_next_iteration
    std::vector<int64_t> newRunning(running.size(), pad);
    for (int64_t b = 0; b < B; ++b) {
      std::vector<float> trl(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; ++k)
        trl[k] = topkLogProbs[b * K + k] + (hits[b * K + k] ? -1.0e9f : -0.0f);
      std::vector<int64_t> next = topk(trl, N);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t t = 0; t <= cur; ++t)
          newRunning[at(b, n, t)] = topkSeq[(b * K + next[n]) * maxNew + t];
        runningScores[b * N + n] = trl[next[n]];
      }
    }

    // _update_finished_beams (reads is_sent_finished and the heuristic from before this step)
    for (int64_t b = 0; b < B; ++b) {
      bool full = esTrue;
      for (int64_t n = 0; n < N; ++n)
        full = full && isSentFinished[b * N + n];
      std::vector<float> merged(static_cast<size_t>(N + K));
      std::vector<char> mergedFinished(static_cast<size_t>(N + K));
      for (int64_t n = 0; n < N; ++n) {
        merged[n] = beamScores[b * N + n];
        mergedFinished[n] = isSentFinished[b * N + n];
      }
      float denom = float(std::pow(double(cur + 1), lp));
      for (int64_t k = 0; k < K; ++k) {
        bool did = hits[b * K + k] && k < N;
        float s = topkLogProbs[b * K + k] / denom;
        s = s + (full ? -1.0e9f : -0.0f);
        s = s + (!unsatisfied[b] ? -1.0e9f : -0.0f);
        s = s + (!did ? -1.0e9f : -0.0f);
        merged[N + k] = s;
        mergedFinished[N + k] = did;
      }
      std::vector<int64_t> keep = topk(merged, N);
      std::vector<int64_t> newSeq(size_t(N * maxNew), pad), newLen(static_cast<size_t>(N));
      std::vector<float> newScores(static_cast<size_t>(N));
      std::vector<char> newFinished(static_cast<size_t>(N));
      for (int64_t n = 0; n < N; ++n) {
        int64_t src = keep[n];
        if (src < N) {
          for (int64_t t = 0; t < maxNew; ++t)
            newSeq[n * maxNew + t] = sequences[at(b, src, t)];
          newLen[n] = seqLen[b * N + src];
        } else {
          for (int64_t t = 0; t <= cur; ++t)
            newSeq[n * maxNew + t] = topkSeq[(b * K + (src - N)) * maxNew + t];
          newLen[n] = cur + 1;
        }
        newScores[n] = merged[src];
        newFinished[n] = mergedFinished[src];
      }
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t t = 0; t < maxNew; ++t)
          sequences[at(b, n, t)] = newSeq[n * maxNew + t];
        seqLen[b * N + n] = newLen[n];
        beamScores[b * N + n] = newScores[n];
        isSentFinished[b * N + n] = newFinished[n];
      }
    }
    running.swap(newRunning);
    cur += 1;

    // _check_early_stop_heuristic
    for (int64_t b = 0; b < B; ++b) {
      int64_t bestLen = (esNever && lp > 0) ? maxNew : cur;
      float best = runningScores[b * N] / float(std::pow(double(bestLen), lp));
      float minScore = *std::min_element(beamScores.begin() + b * N, beamScores.begin() + (b + 1) * N);
      bool any = false;
      for (int64_t n = 0; n < N; ++n)
        any = any || best > (isSentFinished[b * N + n] ? minScore : -1.0e9f);
      unsatisfied[b] = unsatisfied[b] && any;
    }
    // _beam_search_has_unfinished_sequences
    bool improvementPossible = std::any_of(unsatisfied.begin(), unsatisfied.end(), [](char c) { return c; });
    bool allFinished = std::all_of(isSentFinished.begin(), isSentFinished.end(), [](char c) { return c; });
    bool existsOpenBeam = !(allFinished && esTrue);
    bool validContinuations = !std::all_of(hits.begin(), hits.end(), [](char c) { return c; });
    peerFinished = !(improvementPossible && existsOpenBeam && validContinuations);
  }

  for (int64_t b = 0; b < B; ++b) {
    Output o;
    for (int64_t n = 0; n < cfg.numReturnSequences; ++n) {
      o.sequences.emplace_back(sequences.begin() + at(b, n, 0), sequences.begin() + at(b, n, 0) + seqLen[b * N + n]);
      o.scores.push_back(beamScores[b * N + n]);
    }
    run.items.push_back(std::move(o));
  }
  return run;
}

} // namespace ref
