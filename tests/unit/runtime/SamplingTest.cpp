// Sampling: torch's RNG cannot be matched, so these check distributions and
// supports over many draws with fixed seeds, and determinism.
#include "FakeDecoder.h"
#include "SearchTestUtil.h"
#include "runtime/search/Generate.h"
#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/Sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

using namespace genrt;
using fake::FakeDecoder;
using fake::FakeModel;

namespace {

std::vector<float> fixedRow(int64_t vocab, uint64_t seed) {
  std::vector<float> row(vocab);
  fake::FakeModel m;
  m.vocab = vocab;
  m.seed = seed;
  m.eos = {};
  fake::fakeLogits(m, {}, {}, row.data());
  return row;
}

// Frequencies of `draws` samples from warp(row).
std::vector<double> drawFrequencies(std::vector<float> row, const GenerationConfig &cfg, int draws,
                                    uint64_t seed) {
  search::applyWarpers(row.data(), int64_t(row.size()), cfg);
  std::vector<double> freq(row.size(), 0);
  for (int d = 0; d < draws; ++d)
    freq[search::sampleToken(row.data(), int64_t(row.size()), search::drawOf(seed, 0, 0, uint64_t(d)))] +=
        1.0 / draws;
  return freq;
}

std::vector<int64_t> descendingOrder(const std::vector<float> &row) {
  std::vector<int64_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  return idx;
}

} // namespace

TEST(Sampling, FrequenciesMatchSoftmax) {
  std::vector<float> row = fixedRow(20, 1);
  GenerationConfig cfg;
  cfg.topK = 0;
  const int draws = 40000;
  std::vector<double> freq = drawFrequencies(row, cfg, draws, 7);
  std::vector<float> probs;
  search::softmax(row.data(), int64_t(row.size()), probs);
  for (size_t v = 0; v < row.size(); ++v) {
    double p = probs[v], sigma = std::sqrt(p * (1 - p) / draws);
    EXPECT_NEAR(freq[v], p, 5 * sigma + 1e-4) << "token " << v;
  }
}

TEST(Sampling, TopKNeverLeavesTheTopK) {
  std::vector<float> row = fixedRow(30, 2);
  for (int64_t k : {1, 3, 10}) {
    GenerationConfig cfg;
    cfg.topK = k;
    std::vector<double> freq = drawFrequencies(row, cfg, 20000, uint64_t(k));
    std::vector<int64_t> order = descendingOrder(row);
    std::set<int64_t> top(order.begin(), order.begin() + k);
    for (size_t v = 0; v < row.size(); ++v) {
      if (!top.count(int64_t(v))) {
        EXPECT_EQ(freq[v], 0.0) << "k=" << k << " drew token " << v << " outside the top k";
      }
    }
    // And within the top k, the renormalised softmax.
    double z = 0;
    for (int64_t t : top)
      z += std::exp(double(row[t]));
    for (int64_t t : top) {
      double p = std::exp(double(row[t])) / z;
      EXPECT_NEAR(freq[t], p, 5 * std::sqrt(p * (1 - p) / 20000) + 1e-4) << "k=" << k << " token " << t;
    }
  }
}

TEST(Sampling, TopPSupportIsTheNucleus) {
  std::vector<float> row = fixedRow(12, 3);
  std::vector<float> probs;
  search::softmax(row.data(), int64_t(row.size()), probs);
  std::vector<int64_t> order = descendingOrder(row);
  for (double topP : {0.3, 0.6, 0.9}) {
    // The nucleus: the smallest set of most likely tokens whose mass
    // reaches top_p (HF removes the tail whose cumulative mass <= 1 - top_p).
    std::set<int64_t> nucleus;
    double mass = 0;
    for (int64_t t : order) {
      nucleus.insert(t);
      mass += probs[t];
      if (mass >= topP)
        break;
    }
    GenerationConfig cfg;
    cfg.topK = 0;
    cfg.topP = topP;
    std::vector<double> freq = drawFrequencies(row, cfg, 30000, 11);
    std::set<int64_t> support;
    for (size_t v = 0; v < row.size(); ++v)
      if (freq[v] > 0)
        support.insert(int64_t(v));
    EXPECT_EQ(testutil::str({support.begin(), support.end()}), testutil::str({nucleus.begin(), nucleus.end()}))
        << "top_p=" << topP;
  }
}

TEST(Sampling, MinPRemovesUnlikelyTokens) {
  std::vector<float> row = fixedRow(16, 4);
  std::vector<float> probs;
  search::softmax(row.data(), int64_t(row.size()), probs);
  float top = *std::max_element(probs.begin(), probs.end());
  GenerationConfig cfg;
  cfg.topK = 0;
  cfg.minP = 0.2;
  std::vector<double> freq = drawFrequencies(row, cfg, 20000, 5);
  for (size_t v = 0; v < row.size(); ++v) {
    if (probs[v] < 0.2f * top) {
      EXPECT_EQ(freq[v], 0.0) << "token " << v;
    } else {
      EXPECT_GT(freq[v], 0.0) << "token " << v;
    }
  }
}

TEST(Sampling, TemperatureFlattensAndSharpens) {
  std::vector<float> row = fixedRow(10, 6);
  int64_t best = descendingOrder(row)[0];
  GenerationConfig hot, cold;
  hot.topK = cold.topK = 0;
  hot.temperature = 4.0;
  cold.temperature = 0.25;
  std::vector<double> fh = drawFrequencies(row, hot, 20000, 1), fc = drawFrequencies(row, cold, 20000, 1),
                      f1 = drawFrequencies(row, GenerationConfig{}, 20000, 1);
  EXPECT_LT(fh[best], f1[best]);
  EXPECT_GT(fc[best], f1[best]);
}

namespace {
std::vector<GenerationResult> run(const GenerationConfig &cfg, const testutil::Prompts &p, FakeModel m = {}) {
  FakeDecoder dec(m, 8, 4, 64);
  std::vector<GenerationResult> got;
  Status s = generate(dec, cfg, p.prompts, got);
  EXPECT_TRUE(s.isOk()) << s.message();
  return got;
}
std::string all(const std::vector<GenerationResult> &r) {
  std::string s;
  for (const auto &g : r)
    for (const auto &q : g.sequences)
      s += testutil::str(q.outputIds) + ";";
  return s;
}
} // namespace

TEST(Sampling, TemperatureToZeroEqualsGreedy) {
  testutil::Prompts p = testutil::makePrompts(21, 8, 40, 6, true);
  GenerationConfig greedy;
  greedy.maxNewTokens = 12;
  greedy.repetitionPenalty = 1.2;
  GenerationConfig cold = greedy;
  cold.doSample = true;
  cold.topK = 0;
  cold.temperature = 1e-4;
  EXPECT_EQ(all(run(cold, p)), all(run(greedy, p)));
}

TEST(Sampling, SameSeedSameOutputDifferentSeedsDiffer) {
  testutil::Prompts p = testutil::makePrompts(22, 6, 40);
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.maxNewTokens = 15;
  cfg.numReturnSequences = 3;
  cfg.seed = 123;
  std::string a = all(run(cfg, p)), b = all(run(cfg, p));
  EXPECT_EQ(a, b);
  cfg.seed = 124;
  EXPECT_NE(all(run(cfg, p)), a);
  // The rows of one prompt are different draws.
  std::vector<GenerationResult> r = run(cfg, p);
  EXPECT_EQ(r[0].sequences.size(), 3u);
  EXPECT_NE(testutil::str(r[0].sequences[0].outputIds), testutil::str(r[0].sequences[1].outputIds));
}

TEST(Sampling, BatchingDoesNotChangeDraws) {
  testutil::Prompts p = testutil::makePrompts(23, 6, 40);
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.maxNewTokens = 10;
  cfg.seed = 9;
  std::string together = all(run(cfg, p));
  cfg.batchSize = 1;
  EXPECT_EQ(all(run(cfg, p)), together);
}

// Through generate(): at every step the drawn token is inside the top-k of
// the processed logits the fake model gave for that prefix.
TEST(Sampling, GeneratedTokensStayInTopK) {
  FakeModel m;
  testutil::Prompts p = testutil::makePrompts(24, 6, m.vocab);
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.topK = 3;
  cfg.maxNewTokens = 15;
  cfg.numReturnSequences = 4;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    cfg.seed = seed;
    std::vector<GenerationResult> got = run(cfg, p, m);
    for (size_t i = 0; i < got.size(); ++i)
      for (const GeneratedSequence &s : got[i].sequences) {
        std::vector<int64_t> seq = p.inputs[i].modelPrompt;
        for (int64_t tok : s.outputIds) {
          std::vector<float> row(m.vocab);
          fake::fakeLogits(m, {}, seq, row.data());
          std::vector<int64_t> order = descendingOrder(row);
          EXPECT_TRUE(std::find(order.begin(), order.begin() + 3, tok) != order.begin() + 3)
              << "token " << tok << " is not in the top 3";
          seq.push_back(tok);
        }
      }
  }
}

TEST(Sampling, ScoreIsSumOfWarpedLogProbs) {
  FakeModel m;
  testutil::Prompts p = testutil::makePrompts(25, 3, m.vocab);
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.topK = 5;
  cfg.temperature = 0.7;
  cfg.maxNewTokens = 8;
  std::vector<GenerationResult> got = run(cfg, p, m);
  for (size_t i = 0; i < got.size(); ++i) {
    const GeneratedSequence &s = got[i].sequences[0];
    std::vector<int64_t> seq = p.inputs[i].modelPrompt;
    double sum = 0;
    for (int64_t tok : s.outputIds) {
      std::vector<float> row(m.vocab);
      fake::fakeLogits(m, {}, seq, row.data());
      search::applyWarpers(row.data(), m.vocab, cfg);
      search::logSoftmax(row.data(), m.vocab);
      sum += row[tok];
      seq.push_back(tok);
    }
    EXPECT_NEAR(s.score, sum, 1e-4);
  }
}

// Beam sampling (HF's do_sample with num_beams > 1): an item's K = 2 x beams
// candidates are drawn without replacement from the softmax of its scores,
// then ranked by score. With one new token every candidate finishes, so the
// best returned sequence is the highest-scoring token of the draw: over many
// seeds its frequency must be that of the exact law, enumerated here over
// every ordered draw of K of the 6 tokens (at the prompt's step only beam
// 0's row can be drawn: the others carry HF's -1e9).
TEST(Sampling, BeamSamplingDrawsKWithoutReplacement) {
  FakeModel m;
  m.vocab = 10;
  m.eos = {};
  m.scale = 1.0f;
  testutil::Prompts p;
  p.prompts.push_back(Prompt{{3, 4}, {}});
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.topK = 0;
  cfg.numBeams = 2;
  cfg.numReturnSequences = 2;
  cfg.maxNewTokens = 1;
  std::vector<float> row(10);
  fake::fakeLogits(m, {}, {3, 4}, row.data());
  std::vector<float> probs;
  search::softmax(row.data(), 10, probs);
  const int K = 4;
  std::vector<double> want(10, 0.0);
  std::vector<int> pick(K);
  auto enumerate = [&](auto &&self, int depth, double pr, double left) -> void {
    if (depth == K) {
      int best = pick[0];
      for (int d = 1; d < K; ++d)
        if (row[pick[d]] > row[best])
          best = pick[d];
      want[best] += pr;
      return;
    }
    for (int v = 0; v < 10; ++v) {
      if (std::find(pick.begin(), pick.begin() + depth, v) != pick.begin() + depth)
        continue;
      pick[depth] = v;
      self(self, depth + 1, pr * probs[v] / left, left - probs[v]);
    }
  };
  enumerate(enumerate, 0, 1.0, 1.0);
  const int runs = 3000;
  std::vector<double> freq(10, 0.0);
  for (int s = 0; s < runs; ++s) {
    cfg.seed = uint64_t(s);
    std::vector<GenerationResult> r = run(cfg, p, m);
    ASSERT_EQ(r[0].sequences.size(), 2u);
    const GeneratedSequence &a = r[0].sequences[0], &b = r[0].sequences[1];
    ASSERT_EQ(a.outputIds.size(), 1u);
    EXPECT_GE(row[a.outputIds[0]], row[b.outputIds[0]]); // ranked by score
    EXPECT_NE(a.outputIds[0], b.outputIds[0]);          // without replacement
    EXPECT_NEAR(a.score, std::log(probs[a.outputIds[0]]), 1e-5);
    freq[a.outputIds[0]] += 1.0 / runs;
  }
  for (int v = 0; v < 10; ++v)
    EXPECT_NEAR(freq[v], want[v], 5 * std::sqrt(want[v] * (1 - want[v]) / runs) + 2e-3) << "token " << v;
}

TEST(Sampling, BeamSamplingIsReproducibleAndBatchIndependent) {
  testutil::Prompts p = testutil::makePrompts(24, 5, 40);
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.numBeams = 3;
  cfg.numReturnSequences = 2;
  cfg.maxNewTokens = 8;
  cfg.topK = 20;
  cfg.temperature = 0.9;
  cfg.noRepeatNgramSize = 2;
  cfg.seed = 5;
  const std::string a = all(run(cfg, p));
  EXPECT_EQ(all(run(cfg, p)), a);
  cfg.batchSize = 1;
  EXPECT_EQ(all(run(cfg, p)), a);
  cfg.batchSize = 0;
  cfg.seed = 6;
  EXPECT_NE(all(run(cfg, p)), a);
  cfg.doSample = false; // and not beam search's answer
  EXPECT_NE(all(run(cfg, p)), a);
}

// Beam sampling's warpers keep HF's min_tokens_to_keep (the eos ids + 1);
// fewer drawable candidates than K is an error, as HF's multinomial
// refuses to draw them (here at the prompt's step, where only beam 0 counts).
TEST(Sampling, BeamSamplingKeepsEnoughTokensOrRefuses) {
  std::vector<float> row = fixedRow(12, 3);
  GenerationConfig cfg;
  cfg.topK = 1;
  search::applyWarpers(row.data(), 12, cfg, /*minTokensToKeep=*/3);
  EXPECT_EQ(std::count_if(row.begin(), row.end(), [](float x) { return std::isfinite(x); }), 3);

  testutil::Prompts p = testutil::makePrompts(25, 2, 40);
  cfg = {};
  cfg.doSample = true;
  cfg.numBeams = 2;
  cfg.topK = 3; // 3 tokens of beam 0 against K = 4
  cfg.maxNewTokens = 4;
  FakeDecoder dec(FakeModel{}, 8, 4, 64);
  std::vector<GenerationResult> got;
  Status s = generate(dec, cfg, p.prompts, got);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "beam sampling: fewer than 4 candidates have a nonzero probability (as in HF, whose "
                         "multinomial refuses it)");
}
