// The processors and warpers on hand-made rows, against values worked out
// from HF's definitions.
#include "runtime/search/LogitsProcessors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace genrt;
using namespace genrt::search;

static const float kInf = std::numeric_limits<float>::infinity();

TEST(LogitsProcessors, RepetitionPenaltyDividesPositivesMultipliesNegatives) {
  std::vector<float> row = {2.0f, -2.0f, 1.0f, -1.0f};
  applyRepetitionPenalty(row.data(), 4, {0, 1, 1, 1}, 2.0f); // repeats count once
  EXPECT_FLOAT_EQ(row[0], 1.0f);
  EXPECT_FLOAT_EQ(row[1], -4.0f);
  EXPECT_FLOAT_EQ(row[2], 1.0f);
  EXPECT_FLOAT_EQ(row[3], -1.0f);
}

TEST(LogitsProcessors, NoRepeatNgramBansCompletions) {
  // history 5 6 7 5 6 : the 3-grams (5,6,7),(6,7,5),(7,5,6); prefix (5,6) -> ban 7
  std::vector<float> row(10, 0.f);
  applyNoRepeatNgram(row.data(), 10, {5, 6, 7, 5, 6}, 3);
  for (int v = 0; v < 10; ++v)
    EXPECT_EQ(row[v], v == 7 ? -kInf : 0.f) << v;
  // Bigrams: prefix (6) was followed by 7 -> ban 7 only.
  std::vector<float> row2(10, 0.f);
  applyNoRepeatNgram(row2.data(), 10, {5, 6, 7, 5, 6}, 2);
  for (int v = 0; v < 10; ++v)
    EXPECT_EQ(row2[v], v == 7 ? -kInf : 0.f) << v;
  // n = 1 bans every token seen.
  std::vector<float> row3(10, 0.f);
  applyNoRepeatNgram(row3.data(), 10, {1, 3}, 1);
  EXPECT_EQ(row3[1], -kInf);
  EXPECT_EQ(row3[3], -kInf);
  EXPECT_EQ(row3[2], 0.f);
  // Too short a history for an n-gram: nothing.
  std::vector<float> row4(10, 0.f);
  applyNoRepeatNgram(row4.data(), 10, {1}, 3);
  for (float f : row4)
    EXPECT_EQ(f, 0.f);
}

TEST(LogitsProcessors, MinNewTokens) {
  std::vector<float> row(6, 1.f);
  applyMinNewTokens(row.data(), 6, 2, 3, {2, 4});
  EXPECT_EQ(row[2], -kInf);
  EXPECT_EQ(row[4], -kInf);
  EXPECT_EQ(row[0], 1.f);
  std::vector<float> row2(6, 1.f);
  applyMinNewTokens(row2.data(), 6, 3, 3, {2, 4});
  EXPECT_EQ(row2[2], 1.f);
}

TEST(LogitsProcessors, LogSoftmaxNormalises) {
  std::vector<float> row = {1.f, 2.f, 3.f, -kInf};
  logSoftmax(row.data(), 4);
  double s = 0;
  for (float f : row)
    s += std::exp(double(f));
  EXPECT_NEAR(s, 1.0, 1e-6);
  EXPECT_NEAR(row[2] - row[1], 1.0, 1e-6);
  EXPECT_EQ(row[3], -kInf);
}

TEST(Warpers, TopKKeepsTies) {
  std::vector<float> row = {1.f, 3.f, 2.f, 3.f, 0.f};
  applyTopK(row.data(), 5, 2);
  EXPECT_EQ(row[0], -kInf);
  EXPECT_EQ(row[1], 3.f);
  EXPECT_EQ(row[2], -kInf);
  EXPECT_EQ(row[3], 3.f);
  std::vector<float> row2 = {1.f, 3.f, 2.f, 3.f, 0.f};
  applyTopK(row2.data(), 5, 3); // the 3rd largest is 2: keeps 3, 3, 2
  EXPECT_EQ(row2[2], 2.f);
  EXPECT_EQ(row2[0], -kInf);
}

TEST(Warpers, TopPKeepsTheNucleusAndAtLeastOne) {
  // probs ~ 0.5, 0.3, 0.2
  std::vector<float> row = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::vector<float> a = row;
  applyTopP(a.data(), 3, 0.7); // tail with cum <= 0.3: {0.2} only (0.2+0.3 = 0.5 > 0.3)
  EXPECT_EQ(a[2], -kInf);
  EXPECT_NE(a[1], -kInf);
  std::vector<float> b = row;
  applyTopP(b.data(), 3, 0.4); // remove cum <= 0.6: 0.2 (cum .2), 0.3 (cum .5)
  EXPECT_EQ(b[1], -kInf);
  EXPECT_EQ(b[2], -kInf);
  EXPECT_NE(b[0], -kInf);
  std::vector<float> c = row;
  applyTopP(c.data(), 3, 0.0); // everything is <= 1: the top one stays anyway
  EXPECT_NE(c[0], -kInf);
  EXPECT_EQ(c[1], -kInf);
}

TEST(Warpers, MinP) {
  std::vector<float> row = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  applyMinP(row.data(), 3, 0.25f); // threshold 0.15
  EXPECT_NE(row[0], -kInf);
  EXPECT_NE(row[1], -kInf);
  EXPECT_EQ(row[2], -kInf);
}

TEST(Warpers, OrderAndDefaults) {
  // Temperature before top-p: at T=0.5 the probabilities sharpen to
  // ~0.66/0.24/0.11, so top_p=0.6 keeps only the first.
  std::vector<float> row = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  GenerationConfig cfg;
  cfg.temperature = 0.5;
  cfg.topP = 0.6;
  applyWarpers(row.data(), 3, cfg);
  EXPECT_NE(row[0], -kInf);
  EXPECT_EQ(row[1], -kInf);
}

// applyLogitsProcessors with the generation-config processors: their lengths
// come from the history (HF's input_ids) and the tokens generated so far.
namespace {
std::vector<float> processed(const GenerationConfig &cfg, const std::vector<int64_t> &history, int64_t generated,
                             std::vector<int64_t> eos = {0}, std::vector<int64_t> encoderIds = {}) {
  std::vector<float> row = {-1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  applyLogitsProcessors(row.data(), int64_t(row.size()), history, encoderIds, generated, cfg, eos);
  return row;
}
} // namespace

TEST(LogitsProcessors, EncoderProcessorsReadTheEncodersIdsNotTheHistory) {
  GenerationConfig cfg;
  cfg.encoderNoRepeatNgramSize = 1;
  std::vector<float> row = processed(cfg, {1, 2}, 1, {0}, {4, 4});
  EXPECT_EQ(row[4], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(row[1], 2.f);
  EXPECT_EQ(row[2], 3.f);
  cfg.encoderNoRepeatNgramSize = 0;
  cfg.encoderRepetitionPenalty = 2.0;
  row = processed(cfg, {1, 2}, 1, {0}, {0, 5});
  EXPECT_EQ(row[0], -0.5f); // negative scores shrink towards 0: likelier
  EXPECT_EQ(row[5], 12.f);
  EXPECT_EQ(row[1], 2.f);
}

TEST(LogitsProcessors, ForcedEosAtTheLastPositionOfThePromptPlusMaxNewTokens) {
  GenerationConfig cfg;
  cfg.maxNewTokens = 3;
  cfg.forcedEosTokenIds = {5};
  // Prompt of 2, max length 5: forced when cur_len == 4, i.e. after 2 new tokens.
  std::vector<float> early = processed(cfg, {7, 8, 1}, 1);
  EXPECT_EQ(early[5], 6.f);
  std::vector<float> last = processed(cfg, {7, 8, 1, 2}, 2);
  for (int v = 0; v < 6; ++v)
    EXPECT_EQ(last[v], v == 5 ? 0.f : -kInf) << v;
}

TEST(LogitsProcessors, BeginSuppressAtTheFirstNewTokenOnly) {
  GenerationConfig cfg;
  cfg.beginSuppressTokens = {3};
  EXPECT_EQ(processed(cfg, {7, 8}, 0)[3], -kInf);
  EXPECT_EQ(processed(cfg, {7, 8, 1}, 1)[3], 4.f);
}

TEST(LogitsProcessors, ForcedBosShiftsBeginSuppressPastIt) {
  GenerationConfig cfg;
  cfg.forcedBosTokenId = 2;
  cfg.beginSuppressTokens = {3};
  // A 1-token prompt: the first new token is the forced BOS (cur_len 1)...
  std::vector<float> first = processed(cfg, {7}, 0);
  for (int v = 0; v < 6; ++v)
    EXPECT_EQ(first[v], v == 2 ? 0.f : -kInf) << v;
  // ... and the begin-suppression falls on the token after it.
  EXPECT_EQ(processed(cfg, {7, 2}, 1)[3], -kInf);
  EXPECT_EQ(processed(cfg, {7, 2, 1}, 2)[3], 4.f);
}

TEST(LogitsProcessors, MinLengthCountsThePrompt) {
  GenerationConfig cfg;
  cfg.minLength = 4;
  EXPECT_EQ(processed(cfg, {7, 8, 1}, 1)[0], -kInf); // cur_len 3 < 4
  EXPECT_EQ(processed(cfg, {7, 8, 1, 2}, 2)[0], -1.f);
}

TEST(LogitsProcessors, ExponentialDecayStartsAfterThePrompt) {
  GenerationConfig cfg;
  cfg.expDecayStart = 1;
  cfg.expDecayFactor = 2.0;
  // Prompt of 2: regulation starts at cur_len 3; at cur_len 4 (k = 1) the eos
  // score -1 gains |-1| * (2^1 - 1).
  EXPECT_EQ(processed(cfg, {7, 8, 1}, 1)[0], -1.f);
  EXPECT_FLOAT_EQ(processed(cfg, {7, 8, 1, 2}, 2)[0], 0.f);
}

TEST(LogitsProcessors, SuppressComesAfterForcedEosAsInHf) {
  GenerationConfig cfg;
  cfg.maxNewTokens = 1;
  cfg.forcedEosTokenIds = {5};
  cfg.suppressTokens = {5};
  std::vector<float> row = processed(cfg, {7}, 0);
  for (int v = 0; v < 6; ++v)
    EXPECT_EQ(row[v], -kInf) << v;
  EXPECT_TRUE(cfg.hasLogitsProcessors());
  EXPECT_FALSE(GenerationConfig().hasLogitsProcessors());
}
