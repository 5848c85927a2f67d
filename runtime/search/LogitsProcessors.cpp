#include "runtime/search/LogitsProcessors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace genrt {
namespace search {

static constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void softmax(const float *row, int64_t vocab, std::vector<float> &probs) {
  probs.resize(vocab);
  float mx = kNegInf;
  for (int64_t v = 0; v < vocab; ++v)
    mx = std::max(mx, row[v]);
  if (mx == kNegInf) {
    std::fill(probs.begin(), probs.end(), 0.f);
    return;
  }
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(double(row[v] - mx));
  for (int64_t v = 0; v < vocab; ++v)
    probs[v] = float(std::exp(double(row[v] - mx)) / sum);
}

// Distinct ids of `ids` in the vocabulary, as int32.
static std::vector<int32_t> distinctInVocab(std::vector<int64_t> ids, int64_t vocab) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<int32_t> out;
  for (int64_t t : ids)
    if (t >= 0 && t < vocab)
      out.push_back(int32_t(t));
  return out;
}

void applyRepetitionPenalty(float *row, int64_t vocab, const std::vector<int64_t> &history,
                            float penalty) {
  // HF gathers, penalises and scatters back, so a repeated token is
  // penalised once: dedupe first.
  for (int32_t id : distinctInVocab(history, vocab)) {
    float s = row[id];
    row[id] = s < 0 ? s * penalty : s / penalty;
  }
}

// The tokens that complete, after the history's last n - 1 tokens, an
// n-gram of `source` (the history itself, or the encoder's input), in the
// vocabulary. A history shorter than n - 1 completes none (HF's key is then
// too short).
static void ngramCompletions(const std::vector<int64_t> &history, const std::vector<int64_t> &source, int64_t n,
                             int64_t vocab, std::vector<int64_t> &out) {
  const int64_t len = int64_t(history.size()), srcLen = int64_t(source.size());
  if (n <= 0 || len + 1 < n)
    return;
  const int64_t *prefix = history.data() + (len - (n - 1));
  for (int64_t start = 0; start + n <= srcLen; ++start)
    if (std::equal(prefix, prefix + (n - 1), source.data() + start)) {
      const int64_t banned = source[start + n - 1];
      if (banned >= 0 && banned < vocab)
        out.push_back(banned);
    }
}

static void banNgramCompletions(float *row, int64_t vocab, const std::vector<int64_t> &history,
                                const std::vector<int64_t> &source, int64_t n) {
  std::vector<int64_t> banned;
  ngramCompletions(history, source, n, vocab, banned);
  for (int64_t t : banned)
    row[t] = kNegInf;
}

void applyNoRepeatNgram(float *row, int64_t vocab, const std::vector<int64_t> &history, int64_t n) {
  banNgramCompletions(row, vocab, history, history, n);
}

void applyEncoderRepetitionPenalty(float *row, int64_t vocab, const std::vector<int64_t> &encoderIds,
                                   double penalty) {
  // HF's processor is the repetition penalty by 1 / penalty (a double that
  // torch rounds to float against float scores).
  applyRepetitionPenalty(row, vocab, encoderIds, float(1.0 / penalty));
}

void applyEncoderNoRepeatNgram(float *row, int64_t vocab, const std::vector<int64_t> &history,
                               const std::vector<int64_t> &encoderIds, int64_t n) {
  banNgramCompletions(row, vocab, history, encoderIds, n);
}

void applyMinNewTokens(float *row, int64_t vocab, int64_t generated, int64_t minNewTokens,
                       const std::vector<int64_t> &eos) {
  if (generated >= minNewTokens)
    return;
  for (int64_t e : eos)
    if (e >= 0 && e < vocab)
      row[e] = kNegInf;
}

// Ids outside the vocabulary are ignored here (torch.isin finds nothing);
// genrun refuses them when it reads the option.
static void setIds(float *row, int64_t vocab, const std::vector<int64_t> &ids, float value) {
  for (int64_t t : ids)
    if (t >= 0 && t < vocab)
      row[t] = value;
}

void applySuppressTokens(float *row, int64_t vocab, const std::vector<int64_t> &ids) {
  setIds(row, vocab, ids, kNegInf);
}

void applyBeginSuppressTokens(float *row, int64_t vocab, const std::vector<int64_t> &ids, int64_t curLen,
                              int64_t beginIndex) {
  if (curLen == beginIndex)
    setIds(row, vocab, ids, kNegInf);
}

void applyForcedBos(float *row, int64_t vocab, int64_t bos, int64_t curLen) {
  if (curLen != 1)
    return;
  std::fill(row, row + vocab, kNegInf);
  setIds(row, vocab, {bos}, 0.f);
}

void applyForcedEos(float *row, int64_t vocab, const std::vector<int64_t> &eos, int64_t curLen, int64_t maxLength) {
  if (curLen != maxLength - 1)
    return;
  std::fill(row, row + vocab, kNegInf);
  setIds(row, vocab, eos, 0.f);
}

void applyMinLength(float *row, int64_t vocab, const std::vector<int64_t> &eos, int64_t curLen, int64_t minLength) {
  if (curLen < minLength)
    setIds(row, vocab, eos, kNegInf);
}

void applyExponentialDecayLengthPenalty(float *row, int64_t vocab, const std::vector<int64_t> &eos, int64_t curLen,
                                        int64_t regulationStart, double factor) {
  if (curLen <= regulationStart)
    return;
  // torch: a float32 tensor times a Python float computes in float32.
  const float scale = static_cast<float>(std::pow(factor, double(curLen - regulationStart)) - 1.0);
  std::vector<int64_t> seen;
  for (int64_t e : eos) {
    if (e < 0 || e >= vocab || std::find(seen.begin(), seen.end(), e) != seen.end())
      continue; // penalties[:, eos] = p assigns once per id
    seen.push_back(e);
    const float s = row[e];
    row[e] = s + (std::isfinite(s) ? std::fabs(s) * scale : 0.f);
  }
}

// HF's SequenceBiasLogitsProcessor over n entries, entry(k) giving the k-th
// (sequence, bias) or a null sequence to leave it out: the ids its bias row
// touches with their sums — one-token biases set (HF's length_1_bias, the
// last one of an id wins), longer ones added where the history ends with
// their prefix, in entry order, from 0.f as in HF's row.
template <typename Entry>
static std::vector<std::pair<int32_t, float>> sequenceBiasOf(int64_t vocab, const std::vector<int64_t> &history,
                                                             size_t n, Entry entry) {
  std::vector<std::pair<int32_t, float>> bias;
  auto at = [&](int64_t t) -> float & {
    for (auto &[id, b] : bias)
      if (id == t)
        return b;
    return bias.emplace_back(int32_t(t), 0.f).second;
  };
  for (size_t k = 0; k < n; ++k) {
    auto [seq, b] = entry(k);
    if (seq && seq->size() == 1 && (*seq)[0] >= 0 && (*seq)[0] < vocab)
      at((*seq)[0]) = b;
  }
  const int64_t have = static_cast<int64_t>(history.size());
  for (size_t k = 0; k < n; ++k) {
    auto [seq, b] = entry(k);
    if (!seq)
      continue;
    const int64_t len = static_cast<int64_t>(seq->size());
    if (len == 1 || len - 1 > have || seq->back() < 0 || seq->back() >= vocab) // HF: a prefix longer than the history
      continue;
    if (std::equal(seq->begin(), seq->end() - 1, history.end() - (len - 1)))
      at(seq->back()) += b;
  }
  return bias;
}

static std::vector<std::pair<int32_t, float>>
sequenceBiasOf(int64_t vocab, const std::vector<int64_t> &history,
               const std::vector<std::pair<std::vector<int64_t>, float>> &bias) {
  return sequenceBiasOf(vocab, history, bias.size(),
                        [&](size_t k) { return std::make_pair(&bias[k].first, bias[k].second); });
}

// The ids bad_words_ids bans at this step (a bias of -inf; HF drops a lone eos).
static std::vector<std::pair<int32_t, float>> badWordsOf(int64_t vocab, const std::vector<int64_t> &history,
                                                         const std::vector<std::vector<int64_t>> &badWords,
                                                         const std::vector<int64_t> &eos) {
  return sequenceBiasOf(vocab, history, badWords.size(), [&](size_t k) {
    const std::vector<int64_t> &seq = badWords[k];
    const bool eosAlone = seq.size() == 1 && std::find(eos.begin(), eos.end(), seq[0]) != eos.end();
    return std::make_pair(eosAlone ? nullptr : &seq, kNegInf);
  });
}

// HF adds the whole bias row: 0.f where nothing is biased.
static void addBiasRow(float *row, int64_t vocab, const std::vector<std::pair<int32_t, float>> &bias) {
  std::vector<float> add(static_cast<size_t>(vocab), 0.f);
  for (const auto &[t, b] : bias)
    add[size_t(t)] = b;
  for (int64_t v = 0; v < vocab; ++v)
    row[v] += add[size_t(v)];
}

// The sequence bias row, then OpenAI's presence / frequency penalties over
// the generated tokens (the history's last `generated`) summed into it:
// one row, so the host and the device add the same float to each score.
static std::vector<std::pair<int32_t, float>> biasRowOf(int64_t vocab, const std::vector<int64_t> &history,
                                                        int64_t generated, const GenerationConfig &cfg) {
  std::vector<std::pair<int32_t, float>> bias;
  if (!cfg.sequenceBias.empty())
    bias = sequenceBiasOf(vocab, history, cfg.sequenceBias);
  if (cfg.presencePenalty == 0.0 && cfg.frequencyPenalty == 0.0)
    return bias;
  std::vector<std::pair<int64_t, int64_t>> counts; // id, times generated; first-seen order
  for (auto it = history.end() - std::min<int64_t>(generated, int64_t(history.size())); it != history.end(); ++it) {
    auto c = std::find_if(counts.begin(), counts.end(), [&](const auto &p) { return p.first == *it; });
    if (c == counts.end())
      counts.emplace_back(*it, 1);
    else
      ++c->second;
  }
  for (const auto &[id, n] : counts) {
    if (id < 0 || id >= vocab)
      continue;
    const float pen = -(float(cfg.presencePenalty) + float(cfg.frequencyPenalty) * float(n));
    auto b = std::find_if(bias.begin(), bias.end(), [&](const auto &p) { return p.first == id; });
    if (b == bias.end())
      bias.emplace_back(int32_t(id), pen);
    else
      b->second += pen;
  }
  return bias;
}

void applySequenceBias(float *row, int64_t vocab, const std::vector<int64_t> &history,
                       const std::vector<std::pair<std::vector<int64_t>, float>> &bias) {
  addBiasRow(row, vocab, sequenceBiasOf(vocab, history, bias));
}

void applyBadWords(float *row, int64_t vocab, const std::vector<int64_t> &history,
                   const std::vector<std::vector<int64_t>> &badWords, const std::vector<int64_t> &eos) {
  addBiasRow(row, vocab, badWordsOf(vocab, history, badWords, eos));
}

void applyLogitsProcessors(float *row, int64_t vocab, const std::vector<int64_t> &history,
                           const std::vector<int64_t> &encoderIds, int64_t generated,
                           const GenerationConfig &cfg, const std::vector<int64_t> &eos) {
  if (!cfg.sequenceBias.empty() || cfg.presencePenalty != 0.0 || cfg.frequencyPenalty != 0.0)
    addBiasRow(row, vocab, biasRowOf(vocab, history, generated, cfg));
  if (cfg.encoderRepetitionPenalty != 1.0)
    applyEncoderRepetitionPenalty(row, vocab, encoderIds, cfg.encoderRepetitionPenalty);
  if (cfg.repetitionPenalty != 1.0)
    applyRepetitionPenalty(row, vocab, history, float(cfg.repetitionPenalty));
  if (cfg.noRepeatNgramSize > 0)
    applyNoRepeatNgram(row, vocab, history, cfg.noRepeatNgramSize);
  if (cfg.encoderNoRepeatNgramSize > 0)
    applyEncoderNoRepeatNgram(row, vocab, history, encoderIds, cfg.encoderNoRepeatNgramSize);
  if (!cfg.badWordsIds.empty())
    applyBadWords(row, vocab, history, cfg.badWordsIds, eos);
  const int64_t curLen = static_cast<int64_t>(history.size()), promptLen = curLen - generated;
  if (cfg.minLength > 0 && !eos.empty())
    applyMinLength(row, vocab, eos, curLen, cfg.minLength);
  if (cfg.minNewTokens > 0 && !eos.empty())
    applyMinNewTokens(row, vocab, generated, cfg.minNewTokens, eos);
  if (cfg.forcedBosTokenId >= 0)
    applyForcedBos(row, vocab, cfg.forcedBosTokenId, curLen);
  if (!cfg.forcedEosTokenIds.empty()) // HF: max_length = input length + max_new_tokens
    applyForcedEos(row, vocab, cfg.forcedEosTokenIds, curLen, promptLen + cfg.maxNewTokens);
  if (cfg.expDecayStart >= 0 && !eos.empty())
    applyExponentialDecayLengthPenalty(row, vocab, eos, curLen, cfg.expDecayStart + promptLen, cfg.expDecayFactor);
  if (!cfg.suppressTokens.empty())
    applySuppressTokens(row, vocab, cfg.suppressTokens);
  if (!cfg.beginSuppressTokens.empty()) // HF's begin index: +1 past a forced BOS after a 1-token prompt
    applyBeginSuppressTokens(row, vocab, cfg.beginSuppressTokens, curLen,
                             promptLen + (promptLen == 1 && cfg.forcedBosTokenId >= 0 ? 1 : 0));
  if (cfg.renormalizeLogits)
    logSoftmax(row, vocab);
}

void listedTokenRule(const std::vector<int64_t> &history, const std::vector<int64_t> &encoderIds, int64_t generated,
                     const GenerationConfig &cfg, const std::vector<int64_t> &eos, int64_t vocab, BeamRow &row) {
  // As applyLogitsProcessors, in its order; HF's encoder penalty is the
  // repetition penalty by 1 / penalty, rounded to float.
  row.biased = biasRowOf(vocab, history, generated, cfg);
  row.encoderPenalty = float(1.0 / cfg.encoderRepetitionPenalty);
  row.encoderPenalized.clear();
  if (cfg.encoderRepetitionPenalty != 1.0)
    row.encoderPenalized = distinctInVocab(encoderIds, vocab);
  row.penalty = float(cfg.repetitionPenalty);
  row.penalized.clear();
  if (cfg.repetitionPenalty != 1.0)
    row.penalized = distinctInVocab(history, vocab);
  std::vector<int64_t> ids;
  if (cfg.noRepeatNgramSize > 0)
    ngramCompletions(history, history, cfg.noRepeatNgramSize, vocab, ids);
  if (cfg.encoderNoRepeatNgramSize > 0)
    ngramCompletions(history, encoderIds, cfg.encoderNoRepeatNgramSize, vocab, ids);
  // A bad word's bias of -inf is a ban (s + -inf = -inf for every s but +inf).
  if (!cfg.badWordsIds.empty())
    for (const auto &[t, b] : badWordsOf(vocab, history, cfg.badWordsIds, eos))
      ids.push_back(t);
  const int64_t curLen = static_cast<int64_t>(history.size()), promptLen = curLen - generated;
  const bool minLength = cfg.minLength > 0 && curLen < cfg.minLength,
             minNew = cfg.minNewTokens > 0 && generated < cfg.minNewTokens;
  if (minLength || minNew)
    ids.insert(ids.end(), eos.begin(), eos.end());
  // A forced BOS / EOS step sets every score: what came before it is gone,
  // what comes after it (the decay, the suppressions) still applies. The
  // EOS one comes last in HF.
  row.renormalize = cfg.renormalizeLogits;
  row.force = false;
  row.forced.clear();
  std::vector<int64_t> forced;
  if (cfg.forcedBosTokenId >= 0 && curLen == 1) {
    row.force = true;
    forced = {cfg.forcedBosTokenId};
  }
  if (!cfg.forcedEosTokenIds.empty() && curLen == promptLen + cfg.maxNewTokens - 1) {
    row.force = true;
    forced = cfg.forcedEosTokenIds;
  }
  if (row.force) {
    row.biased.clear();
    row.encoderPenalized.clear();
    row.penalized.clear();
    ids.clear();
    for (int64_t t : forced)
      if (t >= 0 && t < vocab)
        row.forced.push_back(int32_t(t));
  }
  // applyExponentialDecayLengthPenalty: each distinct eos once.
  row.decayed.clear();
  const int64_t regulationStart = cfg.expDecayStart + promptLen;
  if (cfg.expDecayStart >= 0 && !eos.empty() && curLen > regulationStart) {
    row.decayScale = static_cast<float>(std::pow(cfg.expDecayFactor, double(curLen - regulationStart)) - 1.0);
    row.decayed = distinctInVocab(eos, vocab);
  }
  ids.insert(ids.end(), cfg.suppressTokens.begin(), cfg.suppressTokens.end());
  if (curLen == promptLen + (promptLen == 1 && cfg.forcedBosTokenId >= 0 ? 1 : 0))
    ids.insert(ids.end(), cfg.beginSuppressTokens.begin(), cfg.beginSuppressTokens.end());
  row.banned.clear();
  for (int64_t t : ids)
    if (t >= 0 && t < vocab)
      row.banned.push_back(int32_t(t));
}

SampleRule sampleRuleOf(const GenerationConfig &cfg) {
  SampleRule r;
  r.sample = cfg.doSample;
  r.temperature = float(cfg.temperature);
  r.topK = cfg.topK;
  r.topP = cfg.topP;
  r.minP = float(cfg.minP);
  return r;
}

bool warpersOnDevice(const GenerationConfig &cfg) {
  return !cfg.doSample || (!(cfg.typicalP < 1.0) && !(cfg.epsilonCutoff > 0.0 && cfg.epsilonCutoff < 1.0) &&
                           !(cfg.etaCutoff > 0.0 && cfg.etaCutoff < 1.0));
}

void applyTemperature(float *row, int64_t vocab, float temperature) {
  for (int64_t v = 0; v < vocab; ++v)
    row[v] = row[v] / temperature;
}

void applyTopK(float *row, int64_t vocab, int64_t topK, int64_t minTokensToKeep) {
  int64_t k = std::min(std::max(topK, minTokensToKeep), vocab);
  if (k <= 0 || k >= vocab)
    return;
  std::vector<float> sorted(row, row + vocab);
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<float>());
  float kth = sorted[k - 1];
  for (int64_t v = 0; v < vocab; ++v)
    if (row[v] < kth)
      row[v] = kNegInf;
}

void applyTopP(float *row, int64_t vocab, double topP, int64_t minTokensToKeep) {
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] < row[b]; });
  std::vector<float> probs;
  softmax(row, vocab, probs);
  // torch's CPU cumsum accumulates float in double and stores float; the
  // threshold 1 - top_p is a Python double compared as float32.
  float threshold = float(1.0 - topP);
  int64_t keepFrom = std::max<int64_t>(0, vocab - minTokensToKeep);
  double cum = 0;
  std::vector<int64_t> removed;
  for (int64_t i = 0; i < vocab; ++i) {
    cum += probs[order[i]];
    if (float(cum) <= threshold && i < keepFrom)
      removed.push_back(order[i]);
  }
  for (int64_t id : removed)
    row[id] = kNegInf;
}

void applyMinP(float *row, int64_t vocab, float minP, int64_t minTokensToKeep) {
  std::vector<float> probs;
  softmax(row, vocab, probs);
  float top = *std::max_element(probs.begin(), probs.end());
  float scaled = minP * top;
  // The minTokensToKeep highest-scoring tokens always stay.
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  for (int64_t i = std::min(minTokensToKeep, vocab); i < vocab; ++i)
    if (probs[order[i]] < scaled)
      row[order[i]] = kNegInf;
}

void applyTypicalP(float *row, int64_t vocab, double mass, int64_t minTokensToKeep) {
  std::vector<float> logp(row, row + vocab);
  logSoftmax(logp.data(), vocab);
  // entropy = -sum(logp * p), NaN terms (p = 0, logp = -inf) skipped (nansum)
  float ent = 0.f;
  for (int64_t v = 0; v < vocab; ++v) {
    float t = logp[size_t(v)] * std::exp(logp[size_t(v)]);
    if (!std::isnan(t))
      ent += t;
  }
  ent = -ent;
  std::vector<float> shifted(static_cast<size_t>(vocab));
  for (int64_t v = 0; v < vocab; ++v)
    shifted[size_t(v)] = std::fabs(-logp[size_t(v)] - ent);
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return shifted[a] < shifted[b]; });
  std::vector<float> sortedLogits(static_cast<size_t>(vocab)), probs;
  for (int64_t i = 0; i < vocab; ++i)
    sortedLogits[size_t(i)] = row[order[size_t(i)]];
  softmax(sortedLogits.data(), vocab, probs);
  double cum = 0;
  int64_t lastInd = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    cum += probs[size_t(i)];
    if (float(cum) < float(mass))
      ++lastInd;
  }
  lastInd = std::min(lastInd, vocab - 1);
  const float cut = shifted[size_t(order[size_t(lastInd)])];
  for (int64_t i = std::min(minTokensToKeep, vocab); i < vocab; ++i)
    if (shifted[size_t(order[size_t(i)])] > cut)
      row[order[size_t(i)]] = kNegInf;
}

// Removes tokens with probability below `cut`, but never the minTokensToKeep
// best-scoring ones (HF: and only scores below the k-th largest).
static void removeBelow(float *row, int64_t vocab, const std::vector<float> &probs, float cut,
                        int64_t minTokensToKeep) {
  std::vector<float> sorted(row, row + vocab);
  const int64_t k = std::min(minTokensToKeep, vocab);
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[size_t(k - 1)];
  for (int64_t v = 0; v < vocab; ++v)
    if (probs[size_t(v)] < cut && row[v] < kth)
      row[v] = kNegInf;
}

void applyEpsilonCutoff(float *row, int64_t vocab, double epsilon, int64_t minTokensToKeep) {
  std::vector<float> probs;
  softmax(row, vocab, probs);
  removeBelow(row, vocab, probs, float(epsilon), minTokensToKeep);
}

void applyEtaCutoff(float *row, int64_t vocab, double eta, int64_t minTokensToKeep) {
  std::vector<float> probs, logp(row, row + vocab);
  softmax(row, vocab, probs);
  logSoftmax(logp.data(), vocab);
  float ent = 0.f; // torch Categorical(logits).entropy(): -sum(p * logp), 0 * -inf as 0
  for (int64_t v = 0; v < vocab; ++v)
    if (probs[size_t(v)] > 0.f)
      ent += probs[size_t(v)] * logp[size_t(v)];
  ent = -ent;
  const float e = float(eta);
  const float cut = std::min(e, std::sqrt(e) * std::exp(-ent));
  removeBelow(row, vocab, probs, cut, minTokensToKeep);
}

void applyWarpers(float *row, int64_t vocab, const GenerationConfig &cfg, int64_t minTokensToKeep) {
  if (cfg.temperature != 1.0)
    applyTemperature(row, vocab, float(cfg.temperature));
  if (cfg.topK != 0)
    applyTopK(row, vocab, cfg.topK, minTokensToKeep);
  if (cfg.topP < 1.0)
    applyTopP(row, vocab, cfg.topP, minTokensToKeep);
  if (cfg.minP > 0.0)
    applyMinP(row, vocab, float(cfg.minP), minTokensToKeep);
  if (cfg.typicalP < 1.0)
    applyTypicalP(row, vocab, cfg.typicalP, minTokensToKeep);
  if (cfg.epsilonCutoff > 0.0 && cfg.epsilonCutoff < 1.0)
    applyEpsilonCutoff(row, vocab, cfg.epsilonCutoff, minTokensToKeep);
  if (cfg.etaCutoff > 0.0 && cfg.etaCutoff < 1.0)
    applyEtaCutoff(row, vocab, cfg.etaCutoff, minTokensToKeep);
}

} // namespace search
} // namespace genrt
