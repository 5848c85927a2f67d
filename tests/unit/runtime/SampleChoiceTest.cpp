// The host reference of the device's token choice (runtime/choice/Sampling.h):
// Philox4x32-10 against Random123's published known answers; its top-k /
// top-p / min-p thresholds against the sort-based HF implementations the
// CPU search runs (runtime/search/LogitsProcessors.cpp) on random rows with
// ties and -inf; chooseToken against the host search's own path (processors,
// warpers, draw); the draws' distribution; and generate() through a decoder
// that chooses its tokens itself (as the GPU does) against the CPU's path.
#include "FakeDecoder.h"
#include "SearchTestUtil.h"
#include "runtime/choice/Greedy.h"
#include "runtime/choice/Sampling.h"
#include "runtime/search/Generate.h"
#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace genrt;

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A row of `vocab` logits: with `tieLevels` > 0 drawn from that many values
// (many ties), else continuous; about `negInf` of them -inf.
std::vector<float> randomRow(std::mt19937_64 &rng, int64_t vocab, int tieLevels, double negInf, float scale) {
  std::vector<float> row(static_cast<size_t>(vocab));
  std::uniform_real_distribution<double> u(0, 1);
  for (float &x : row) {
    if (u(rng) < negInf)
      x = kNegInf;
    else if (tieLevels > 0)
      x = float(int(u(rng) * tieLevels)) * scale / float(tieLevels);
    else
      x = float((2 * u(rng) - 1) * scale);
  }
  if (rng() % 7 == 0) // a -0.0 beside +0.0 now and then
    row[rng() % size_t(vocab)] = -0.f;
  return row;
}

std::string kept(const std::vector<float> &row) {
  std::string s;
  for (float x : row)
    s += x == kNegInf ? '.' : '1';
  return s;
}
} // namespace

TEST(SampleChoice, PhiloxKnownAnswers) {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines:
  // counter (4 words), key (2 words) -> 4 words.
  struct Kat {
    std::array<uint32_t, 4> ctr;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> out;
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat &k : kats)
    EXPECT_EQ(philox4x32(k.ctr, k.key), k.out);
}

TEST(SampleChoice, UniformDraws) {
  // In [0, 1), mean 1/2, every argument of (seed, prompt, row, step) matters.
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u = sampleUniform(5, 0, 0, uint64_t(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  const double base = sampleUniform(1, 2, 3, 4);
  EXPECT_EQ(sampleUniform(1, 2, 3, 4), base);
  EXPECT_NE(sampleUniform(2, 2, 3, 4), base);
  EXPECT_NE(sampleUniform(1, 3, 3, 4), base);
  EXPECT_NE(sampleUniform(1, 2, 4, 4), base);
  EXPECT_NE(sampleUniform(1, 2, 3, 5), base);
  EXPECT_NE(sampleUniform(uint64_t(1) << 32 | 1, 2, 3, 4), base);
  EXPECT_NE(sampleUniform(1, uint64_t(1) << 32 | 2, 3, 4), base);
}

TEST(SampleChoice, OrderedKeyIsMonotone) {
  const float xs[] = {kNegInf, -3e38f, -1.f, -1e-30f, -1e-45f, 0.f, 1e-45f, 1e-30f, 1.f, 3e38f,
                      std::numeric_limits<float>::infinity()};
  for (size_t i = 0; i + 1 < sizeof(xs) / sizeof(xs[0]); ++i)
    EXPECT_LT(orderedKey(xs[i]), orderedKey(xs[i + 1])) << xs[i] << " vs " << xs[i + 1];
  EXPECT_EQ(orderedKey(-0.f), orderedKey(0.f));
}

// The device's thresholds against HF's sort-based warpers (the CPU path) on
// random rows: the same tokens kept, ties and -inf included.
TEST(SampleChoice, ThresholdsMatchSortBasedWarpers) {
  std::mt19937_64 rng(11);
  int rows = 0;
  for (int64_t vocab : {1, 2, 3, 7, 50, 1000, 5000})
    for (int ties : {0, 3, 20, 200})
      for (double negInf : {0.0, 0.3})
        for (int rep = 0; rep < 6; ++rep) {
          const std::vector<float> row = randomRow(rng, vocab, ties, negInf, rep % 2 ? 12.f : 3.f);
          for (int64_t k : {int64_t(1), int64_t(2), int64_t(5), int64_t(50), vocab - 1, vocab, vocab + 3}) {
            if (k < 1)
              continue;
            std::vector<float> a = row, b = row;
            search::applyTopK(a.data(), vocab, k);
            applyTopKRule(b.data(), vocab, k);
            ASSERT_EQ(kept(a), kept(b)) << "top-k " << k << " vocab " << vocab;
          }
          for (double p : {0.01, 0.1, 0.5, 0.9, 0.95, 0.999, 1e-9}) {
            std::vector<float> a = row, b = row;
            search::applyTopP(a.data(), vocab, p);
            applyTopPRule(b.data(), vocab, p);
            ASSERT_EQ(kept(a), kept(b)) << "top-p " << p << " vocab " << vocab << " ties " << ties;
          }
          for (float m : {0.01f, 0.1f, 0.5f, 1.f}) {
            std::vector<float> a = row, b = row;
            search::applyMinP(a.data(), vocab, m);
            applyMinPRule(b.data(), vocab, m);
            ASSERT_EQ(kept(a), kept(b)) << "min-p " << m << " vocab " << vocab;
          }
          ++rows;
        }
  EXPECT_GT(rows, 300);
}

// Top-p's tie rule on a row of equal values: HF's stable ascending order
// removes the lower indices first.
TEST(SampleChoice, TopPTiesRemoveLowerIndicesFirst) {
  std::vector<float> row(4, 1.f);
  applyTopPRule(row.data(), 4, 0.5); // cum 0.25, 0.5 <= 0.5 removed; 0.75, 1 kept
  EXPECT_EQ(kept(row), "..11");
  std::vector<float> three(3, 2.f);
  applyTopPRule(three.data(), 3, 1.0 / 3); // float(cum 2/3) <= float(2/3): only the last stays
  EXPECT_EQ(kept(three), "..1");
  std::vector<float> tiny = {0.f, 5.f, 5.f};
  applyTopPRule(tiny.data(), 3, 1e-9); // threshold float(1 - 1e-9) == 1: the last alone stays
  EXPECT_EQ(kept(tiny), "..1");
}

// chooseToken (the device's rule) against the host search's own path for a
// step: the processors (as edits), applyWarpers, the draw.
TEST(SampleChoice, ChooseTokenMatchesTheHostPath) {
  std::mt19937_64 rng(3);
  int n = 0;
  for (int rep = 0; rep < 400; ++rep) {
    const int64_t vocab = 1 + int64_t(rng() % 3000);
    const std::vector<float> row = randomRow(rng, vocab, rep % 3 == 0 ? 40 : 0, rep % 4 == 0 ? 0.2 : 0.0, 6.f);
    BeamRow e;
    e.penalty = rep % 2 ? 1.3f : 1.f;
    e.encoderPenalty = rep % 5 == 0 ? 0.8f : 1.f;
    for (int i = 0; i < 8 && vocab > 8; ++i) {
      e.penalized.push_back(int32_t(i * (vocab / 8)));
      if (rep % 5 == 0)
        e.encoderPenalized.push_back(int32_t(i * (vocab / 8) + 1));
      if (i % 3 == 0)
        e.banned.push_back(int32_t(rng() % uint64_t(vocab)));
    }
    if (rep % 17 == 0) {
      e.force = true;
      e.forced = {int32_t(rng() % uint64_t(vocab))};
    }
    GenerationConfig cfg;
    cfg.doSample = rep % 6 != 0;
    cfg.temperature = rep % 3 == 0 ? 0.7 : rep % 3 == 1 ? 1.0 : 1.6;
    cfg.topK = rep % 4 == 0 ? 0 : int64_t(1 + rng() % 60);
    cfg.topP = rep % 5 < 2 ? 1.0 : 0.5 + 0.49 * double(rep % 7) / 7;
    cfg.minP = rep % 3 == 2 ? 0.05 : 0.0;
    const double u = sampleUniform(9, uint64_t(rep), 0, 0);
    // The host path: edits = the processors of a listed rule (checked for
    // listedTokenRule in LogitsProcessorsTest), then warpers, draw, score.
    std::vector<float> host = row;
    applyRowEdits(host.data(), vocab, e);
    int64_t want;
    float wantLogprob;
    if (cfg.doSample) {
      search::applyWarpers(host.data(), vocab, cfg);
      want = search::sampleToken(host.data(), vocab, u);
      search::logSoftmax(host.data(), vocab);
      wantLogprob = host[size_t(want)];
    } else {
      search::applyWarpers(host.data(), 0, cfg); // nothing: greedy takes no warper
      greedyChoice(host.data(), vocab, want, wantLogprob);
    }
    std::vector<float> dev = row;
    int64_t got;
    float gotLogprob;
    chooseToken(dev.data(), vocab, e, search::sampleRuleOf(cfg), u, got, gotLogprob);
    ASSERT_EQ(got, want) << "rep " << rep;
    ASSERT_EQ(gotLogprob, wantLogprob) << "rep " << rep;
    ++n;
  }
  EXPECT_EQ(n, 400);
}

// renormalize_logits, which HF applies after the warpers, changes neither
// the token nor its logprob (greedy search and sampling choose without it:
// runtime/search/GreedyAndSampling.cpp). HF's order on random rows with
// ties and -inf: edits, warpers, log-softmax, then the draw or argmax and
// the chosen token's log-softmax, against chooseToken with no log-softmax.
TEST(SampleChoice, RenormalizeLogitsChangesNoChoice) {
  std::mt19937_64 rng(13);
  int sampled = 0;
  for (int rep = 0; rep < 600; ++rep) {
    const int64_t vocab = 2 + int64_t(rng() % 3000);
    const std::vector<float> row = randomRow(rng, vocab, rep % 3 == 0 ? 40 : 0, rep % 4 == 0 ? 0.2 : 0.0, 8.f);
    BeamRow e;
    e.penalty = rep % 2 ? 1.3f : 1.f;
    for (int i = 0; i < 8 && vocab > 8; ++i)
      e.penalized.push_back(int32_t(i * (vocab / 8)));
    GenerationConfig cfg;
    cfg.doSample = rep % 4 != 0;
    cfg.temperature = rep % 3 == 0 ? 0.7 : rep % 3 == 1 ? 1.0 : 1.6;
    cfg.topK = rep % 4 == 1 ? 0 : int64_t(1 + rng() % 60);
    cfg.topP = rep % 5 < 2 ? 1.0 : 0.6 + 0.39 * double(rep % 7) / 7;
    cfg.minP = rep % 3 == 2 ? 0.05 : 0.0;
    const double u = sampleUniform(21, uint64_t(rep), 0, 0);
    std::vector<float> hf = row;
    applyRowEdits(hf.data(), vocab, e);
    int64_t want;
    float wantLogprob;
    if (cfg.doSample) {
      search::applyWarpers(hf.data(), vocab, cfg);
      search::logSoftmax(hf.data(), vocab); // renormalize_logits
      want = search::sampleToken(hf.data(), vocab, u);
      search::logSoftmax(hf.data(), vocab);
      wantLogprob = hf[size_t(want)];
      ++sampled;
    } else {
      search::logSoftmax(hf.data(), vocab);
      greedyChoice(hf.data(), vocab, want, wantLogprob);
    }
    std::vector<float> ours = row;
    int64_t got;
    float gotLogprob;
    chooseToken(ours.data(), vocab, e, search::sampleRuleOf(cfg), u, got, gotLogprob);
    ASSERT_EQ(got, want) << "rep " << rep;
    ASSERT_NEAR(gotLogprob, wantLogprob, 4e-6f * std::max(1.f, std::fabs(wantLogprob))) << "rep " << rep;
  }
  EXPECT_GT(sampled, 400);
}

// Over many draws, the sampled tokens follow the renormalised distribution
// over the kept set (top-k 5, top-p 0.8, temperature 0.9).
// Beam sampling's K draws without replacement: the same tokens, bit for
// bit, as K calls of the one-draw rule with each drawn score set to -inf
// between them; on rows of ties at the maximum, -inf, peaked rows (the
// maximum drawn first, so the weights are made again) and rows with fewer
// drawable scores than draws (-1 once nothing is left, then no more).
TEST(SampleChoice, DrawsWithoutReplacementEqualRepeatedDraws) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u01(0, 1);
  int64_t remade = 0, exhausted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t n = 1 + int64_t(rng() % 400);
    const int tieLevels = trial % 3 == 0 ? 1 + int(rng() % 6) : 0;
    const double negInf = trial % 5 == 0 ? 0.97 : u01(rng) * 0.5;
    // 60: peaked, the max nearly always drawn first; 900: weights relative
    // to an old maximum underflow to 0 (as beam sampling's -1e9 rows would).
    const float scale = trial % 4 == 0 ? 60.f : trial % 4 == 1 ? 900.f : 4.f;
    std::vector<float> row = randomRow(rng, n, tieLevels, negInf, scale);
    std::vector<double> us(static_cast<size_t>(1 + rng() % 12));
    for (double &x : us)
      x = u01(rng);
    std::vector<float> want = row, got = row;
    std::vector<int64_t> expected;
    for (double x : us) {
      float mx = kNegInf;
      for (float v : want)
        mx = std::max(mx, v);
      if (mx == kNegInf) {
        expected.push_back(-1);
        ++exhausted;
        break;
      }
      const int64_t f = drawToken(want.data(), n, x);
      remade += want[size_t(f)] == mx; // the next draw's maximum may move
      expected.push_back(f);
      want[size_t(f)] = kNegInf;
    }
    std::vector<int64_t> picks;
    drawTokensWithoutReplacement(got.data(), n, us, picks);
    ASSERT_EQ(picks, expected) << "trial " << trial;
    for (int64_t v = 0; v < n; ++v) // the drawn scores left -inf, the rest untouched
      ASSERT_EQ(std::memcmp(&got[size_t(v)], &want[size_t(v)], 4), 0) << "trial " << trial << " score " << v;
  }
  EXPECT_GT(remade, 1000);
  EXPECT_GT(exhausted, 50);
}

TEST(SampleChoice, DrawsFollowTheKeptDistribution) {
  std::mt19937_64 rng(5);
  const int64_t vocab = 200;
  const std::vector<float> row = randomRow(rng, vocab, 0, 0.0, 4.f);
  SampleRule rule;
  rule.sample = true;
  rule.temperature = 0.9f;
  rule.topK = 5;
  rule.topP = 0.8;
  std::vector<float> fin = row;
  int64_t tok;
  float lp;
  chooseToken(fin.data(), vocab, BeamRow{}, rule, 0.5, tok, lp);
  std::vector<float> probs;
  search::softmax(fin.data(), vocab, probs);
  const int draws = 50000;
  std::vector<double> freq(static_cast<size_t>(vocab), 0);
  for (int d = 0; d < draws; ++d) {
    std::vector<float> r = row;
    chooseToken(r.data(), vocab, BeamRow{}, rule, sampleUniform(17, 0, 0, uint64_t(d)), tok, lp);
    ASSERT_NE(fin[size_t(tok)], kNegInf) << "drew a removed token";
    freq[size_t(tok)] += 1.0 / draws;
  }
  for (int64_t v = 0; v < vocab; ++v) {
    const double p = probs[size_t(v)], sigma = std::sqrt(p * (1 - p) / draws);
    EXPECT_NEAR(freq[size_t(v)], p, 5 * sigma + 1e-4) << "token " << v;
  }
}

namespace {
// A decoder that claims to choose tokens itself, as the GPU's does: the
// search then takes the forwardTokens path (rules built from the history,
// draws staged per step), here answered by the host reference.
class ChoosingDecoder : public fake::FakeDecoder {
public:
  using FakeDecoder::FakeDecoder;
  bool chooses(const ChoiceRequest &request) const override { return request.kind == ChoiceKind::Tokens; }
  Status forward(const std::vector<Chunk> &chunks, const ChoiceRequest &request, ChoiceAnswer &answer) override {
    tokenSteps += request.kind == ChoiceKind::Tokens;
    return FakeDecoder::forward(chunks, request, answer);
  }
  int tokenSteps = 0;
};

std::string outputs(const std::vector<GenerationResult> &r, bool scores) {
  std::string s;
  for (const auto &g : r)
    for (const auto &q : g.sequences) {
      s += testutil::str(q.outputIds);
      if (scores) {
        char b[32];
        std::snprintf(b, sizeof b, "@%.6f", q.score);
        s += b;
      }
      s += ";";
    }
  return s;
}
} // namespace

// generate() through the device's path (edits and draws per row and step)
// gives what the CPU's path gives: greedy with processors, and sampling with
// the warpers the device runs.
TEST(SampleChoice, GenerateThroughTheDevicePathMatchesTheHostPath) {
  fake::FakeModel m;
  m.vocab = 300;
  m.eosBias = -1.f;
  testutil::Prompts p = testutil::makePrompts(31, 5, m.vocab, 6, /*leftPad=*/true);
  std::vector<GenerationConfig> cfgs;
  GenerationConfig g;
  g.maxNewTokens = 14;
  g.repetitionPenalty = 1.3;
  g.noRepeatNgramSize = 2;
  g.minNewTokens = 3;
  g.suppressTokens = {7, 9};
  cfgs.push_back(g); // greedy with processors
  GenerationConfig s = g;
  s.doSample = true;
  s.seed = 4;
  s.numReturnSequences = 3;
  s.temperature = 0.8;
  s.topK = 20;
  s.topP = 0.9;
  cfgs.push_back(s);
  s.minP = 0.05;
  s.topK = 0;
  s.repetitionPenalty = 1.0;
  s.temperature = 1.3;
  cfgs.push_back(s);
  s.topP = 1.0;
  s.topK = 3;
  s.forcedEosTokenIds = {2};
  cfgs.push_back(s);
  for (size_t c = 0; c < cfgs.size(); ++c) {
    fake::FakeDecoder host(m, 8, 4, 64);
    ChoosingDecoder dev(m, 8, 4, 64);
    std::vector<GenerationResult> a, b;
    ASSERT_TRUE(generate(host, cfgs[c], p.prompts, a).isOk());
    ASSERT_TRUE(generate(dev, cfgs[c], p.prompts, b).isOk());
    EXPECT_GT(dev.tokenSteps, 0) << "config " << c;
    EXPECT_EQ(outputs(b, true), outputs(a, true)) << "config " << c;
  }
  // renormalize_logits: still the device's path, the same tokens as
  // without it and the same scores within rounding.
  for (size_t c = 0; c < cfgs.size(); ++c) {
    GenerationConfig r = cfgs[c];
    r.renormalizeLogits = true;
    ChoosingDecoder dev(m, 8, 4, 64);
    fake::FakeDecoder host(m, 8, 4, 64);
    std::vector<GenerationResult> a, b;
    ASSERT_TRUE(generate(dev, r, p.prompts, a).isOk());
    ASSERT_TRUE(generate(host, cfgs[c], p.prompts, b).isOk());
    EXPECT_GT(dev.tokenSteps, 0) << "config " << c;
    EXPECT_EQ(outputs(a, false), outputs(b, false)) << "config " << c;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      for (size_t q = 0; q < a[i].sequences.size(); ++q)
        EXPECT_NEAR(a[i].sequences[q].score, b[i].sequences[q].score, 1e-4) << "config " << c;
  }
  // Typical-p stays on the host: no device steps.
  GenerationConfig t = cfgs[1];
  t.typicalP = 0.9;
  ChoosingDecoder dev(m, 8, 4, 64);
  std::vector<GenerationResult> r;
  ASSERT_TRUE(generate(dev, t, p.prompts, r).isOk());
  EXPECT_EQ(dev.tokenSteps, 0);
}
