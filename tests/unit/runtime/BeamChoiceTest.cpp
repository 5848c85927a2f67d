// Beam candidates (runtime/choice/Beams.h): the rule the device kernel
// reproduces, against a brute-force sort; and the listed-token rule a beam
// search hands the decoder, against the full processors on the same row.
#include "runtime/choice/Beams.h"
#include "runtime/search/LogitsProcessors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <cstring>

using namespace genrt;
using namespace genrt::search;

static const float kInf = std::numeric_limits<float>::infinity();

// Every (token, score) in (score desc, token asc) order.
static void bruteForce(const std::vector<float> &acc, std::vector<int32_t> &tok, std::vector<float> &sc) {
  tok.resize(acc.size());
  std::iota(tok.begin(), tok.end(), 0);
  std::stable_sort(tok.begin(), tok.end(), [&](int32_t a, int32_t b) { return acc[a] > acc[b]; });
  sc.clear();
  for (int32_t t : tok)
    sc.push_back(acc[t]);
}

TEST(BeamChoice, TopCandidatesBreakTiesTowardsTheLowerToken) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t V = 1 + rng() % 300, k = 1 + rng() % std::min<int64_t>(V, 32);
    std::vector<float> acc(V);
    for (float &a : acc) // few distinct values: many ties, some -inf
      a = rng() % 7 == 0 ? -kInf : float(int(rng() % 5)) * 0.5f;
    std::vector<int32_t> tok(k), all;
    std::vector<float> sc(k), allSc;
    topCandidates(acc.data(), V, k, tok.data(), sc.data());
    bruteForce(acc, all, allSc);
    for (int64_t n = 0; n < k; ++n) {
      ASSERT_EQ(tok[n], all[n]) << "trial " << trial << " rank " << n;
      ASSERT_EQ(sc[n], allSc[n]);
    }
  }
}

TEST(BeamChoice, PenaltyThenBansThenScore) {
  // logits 0, ln 2, ln 3 ... one row; log-softmax then the edits by hand.
  const int64_t V = 6;
  std::vector<float> row = {1.f, 2.f, 3.f, -1.f, 0.5f, 2.5f};
  BeamRow r;
  r.score = -1.5f;
  r.penalty = 2.f;
  r.penalized = {2, 3, 5};
  r.banned = {5, 1};
  std::vector<float> expect = row;
  logSoftmax(expect.data(), V);
  for (int32_t t : r.penalized)
    expect[t] = expect[t] < 0 ? expect[t] * 2.f : expect[t] / 2.f;
  for (int32_t t : r.banned)
    expect[t] = -kInf;
  for (float &e : expect)
    e = e + r.score;
  std::vector<int32_t> tok(V), want;
  std::vector<float> sc(V), wantSc;
  beamCandidates(row.data(), V, r, V, tok.data(), sc.data());
  bruteForce(expect, want, wantSc);
  EXPECT_EQ(tok, want);
  EXPECT_EQ(sc, wantSc);
  EXPECT_EQ(sc[V - 1], -kInf); // the banned come last, the lower id first
  EXPECT_EQ(tok[V - 2], 1);
  EXPECT_EQ(tok[V - 1], 5);
}

TEST(BeamChoice, AllMinusInfinityStaysMinusInfinity) {
  std::vector<float> row(5, -kInf);
  BeamRow r;
  r.score = 3.f;
  std::vector<int32_t> tok(2);
  std::vector<float> sc(2);
  beamCandidates(row.data(), 5, r, 2, tok.data(), sc.data());
  EXPECT_EQ(tok, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(sc[0], -kInf);
}

// For every config (renormalize_logits too), the BeamRow a search builds
// ranks a row exactly as log-softmax + applyLogitsProcessors + the running
// score does (HF's _beam_search).
TEST(BeamChoice, ListedTokenRuleEqualsTheProcessors) {
  std::mt19937 rng(11);
  const std::vector<int64_t> eos = {2, 9};
  int renormalized = 0, forcedRows = 0, longerBiases = 0, badWordRows = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const int64_t V = 12 + rng() % 40;
    GenerationConfig cfg;
    const double pens[] = {1.0, 1.3, 0.7};
    cfg.repetitionPenalty = pens[rng() % 3];
    cfg.noRepeatNgramSize = rng() % 4;
    cfg.minLength = rng() % 2 ? int64_t(rng() % 12) : 0;
    cfg.minNewTokens = rng() % 2 ? int64_t(rng() % 5) : 0;
    if (rng() % 3 == 0)
      cfg.suppressTokens = {int64_t(rng() % V), int64_t(rng() % V)};
    if (rng() % 3 == 0)
      cfg.beginSuppressTokens = {int64_t(rng() % V)};
    if (rng() % 4 == 0)
      cfg.forcedBosTokenId = rng() % 2 ? 1 : V + 3; // out of the vocabulary: every score -inf
    if (rng() % 4 == 0)
      cfg.forcedEosTokenIds = {2, int64_t(rng() % V)};
    cfg.maxNewTokens = 1 + rng() % 6;
    if (rng() % 3 == 0) {
      cfg.expDecayStart = rng() % 3;
      cfg.expDecayFactor = rng() % 2 ? 1.5 : 0.8;
    }
    const double encPens[] = {1.0, 1.5, 0.6};
    cfg.encoderRepetitionPenalty = encPens[rng() % 3];
    cfg.encoderNoRepeatNgramSize = rng() % 3;
    // Ids 0..2 fill a quarter of the history: the longer sequences' prefixes
    // match its tail often. Id 2 is an eos: HF drops it as a lone bad word.
    auto id = [&](int64_t below) { return int64_t(rng() % uint64_t(below)); };
    if (rng() % 3 == 0) // an id biased twice alone: the last bias wins; longer ones add to it
      cfg.sequenceBias = {{{id(V)}, -1.5f}, {{id(3), id(V)}, 0.75f}, {{id(3)}, 2.f}, {{id(3)}, -0.5f},
                          {{id(3), id(3), id(V)}, 1.25f}, {{id(3), id(3)}, -kInf}};
    if (rng() % 3 == 0)
      cfg.badWordsIds = {{id(V)}, {2}, {id(3), id(3)}, {9, id(V)}, {id(3), id(3), id(V)}};
    if (rng() % 7 == 0)
      cfg.renormalizeLogits = true; // the rule's second log-softmax
    renormalized += cfg.renormalizeLogits;
    const int64_t prompt = rng() % 3 ? 1 : 1 + rng() % 6, generated = rng() % 6; // 1-token prompts: forced BOS
    std::vector<int64_t> history;
    for (int64_t i = 0; i < prompt + generated; ++i)
      history.push_back(rng() % 4 == 0 ? int64_t(rng() % 3) : int64_t(rng() % V)); // repeats: n-grams recur
    std::vector<int64_t> encoderIds;
    for (int64_t i = 0, n = 2 + rng() % 8; i < n; ++i)
      encoderIds.push_back(rng() % 3 == 0 ? history[rng() % history.size()] : int64_t(rng() % (V + 2)));
    std::vector<float> row(V);
    for (float &x : row)
      x = float(int(rng() % 9) - 4) * 0.75f;
    const float score = -float(rng() % 5);
    std::vector<float> host = row;
    logSoftmax(host.data(), V);
    applyLogitsProcessors(host.data(), V, history, encoderIds, generated, cfg, eos);
    for (float &h : host)
      h = h + score;
    std::vector<int32_t> want(V), got(V);
    std::vector<float> wantSc(V), gotSc(V);
    topCandidates(host.data(), V, V, want.data(), wantSc.data());
    BeamRow r;
    listedTokenRule(history, encoderIds, generated, cfg, eos, V, r);
    forcedRows += r.force;
    for (const auto &[t, b] : r.biased)
      longerBiases += b != -1.5f && b != 2.f && b != -0.5f; // a longer sequence matched
    badWordRows += !cfg.badWordsIds.empty() && !r.banned.empty();
    r.score = score;
    beamCandidates(row.data(), V, r, V, got.data(), gotSc.data());
    ASSERT_EQ(got, want) << "trial " << trial;
    for (int64_t n = 0; n < V; ++n)
      ASSERT_EQ(std::memcmp(&gotSc[n], &wantSc[n], 4), 0) << "trial " << trial << " rank " << n;
  }
  EXPECT_GT(renormalized, 100);
  EXPECT_GT(forcedRows, 20); // forced BOS / EOS steps were among them
  EXPECT_GT(longerBiases, 50);
  EXPECT_GT(badWordRows, 50);
}
