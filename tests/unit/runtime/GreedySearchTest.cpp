// Greedy search against the reference, and the processors' effects.
#include "FakeDecoder.h"
#include "ReferenceSearch.h"
#include "SearchTestUtil.h"
#include "runtime/search/Generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace genrt;
using fake::FakeDecoder;
using fake::FakeModel;

namespace {
void checkGreedy(const FakeModel &m, const testutil::Prompts &p, const GenerationConfig &cfg,
                 bool encoderDecoder = false) {
  FakeDecoder dec(m, 8, 1, 64, encoderDecoder);
  std::vector<GenerationResult> got;
  Status s = generate(dec, cfg, p.prompts, got);
  ASSERT_TRUE(s.isOk()) << s.message();
  ref::Run want = ref::greedy(m, p.inputs, cfg, cfg.effectiveEos(dec.info()));
  testutil::expectSame(got, want, 1e-5f, "greedy");
  EXPECT_EQ(int(dec.calls.size()), want.modelCalls);
}
} // namespace

TEST(GreedySearch, MatchesReference) {
  for (int seed = 0; seed < 40; ++seed) {
    FakeModel m;
    m.seed = uint64_t(seed);
    m.eosBias = seed % 2 ? 2.0f : 0.5f;
    m.eos = seed % 3 ? std::vector<int64_t>{2} : std::vector<int64_t>{2, 6};
    GenerationConfig cfg;
    cfg.maxNewTokens = 12;
    cfg.repetitionPenalty = seed % 4 == 0 ? 1.5 : 1.0;
    cfg.noRepeatNgramSize = seed % 5 == 0 ? 2 : 0;
    cfg.minNewTokens = seed % 6 == 0 ? 4 : 0;
    checkGreedy(m, testutil::makePrompts(uint64_t(seed), 5, m.vocab, 7, seed % 2 == 0), cfg);
  }
}

TEST(GreedySearch, EncoderDecoderMatchesReference) {
  for (int seed = 0; seed < 8; ++seed) {
    FakeModel m;
    m.seed = uint64_t(50 + seed);
    m.eosBias = 1.0f;
    GenerationConfig cfg;
    cfg.maxNewTokens = 10;
    cfg.repetitionPenalty = 1.2;
    checkGreedy(m, testutil::makePrompts(uint64_t(seed), 4, m.vocab, 6, true, true), cfg, true);
  }
}

TEST(GreedySearch, PrefillIsPackedAndFinishedRowsStop) {
  FakeModel m;
  m.eosBias = 2.5f; // rows finish at different steps
  GenerationConfig cfg;
  cfg.maxNewTokens = 16;
  testutil::Prompts p = testutil::makePrompts(9, 6, m.vocab, 7, /*leftPad=*/true);
  FakeDecoder dec(m, 8, 1, 64);
  std::vector<GenerationResult> got;
  ASSERT_TRUE(generate(dec, cfg, p.prompts, got).isOk());

  // One prefill call; each chunk holds the unmasked prompt only.
  ASSERT_EQ(dec.calls[0].chunks.size(), p.prompts.size());
  for (size_t i = 0; i < p.prompts.size(); ++i)
    EXPECT_EQ(testutil::str(dec.calls[0].chunks[i].tokens), testutil::str(p.inputs[i].modelPrompt));

  // After a row's eos, its slot never runs again.
  bool someEarly = false;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto &ids = got[i].sequences[0].outputIds;
    if (ids.empty() || ids.back() != 2)
      continue;
    someEarly = someEarly || int64_t(ids.size()) < cfg.maxNewTokens;
    // Token k (0-based) of row i is fed in call k+1, for k < len-1.
    int32_t slot = dec.calls[0].chunks[i].slot;
    for (size_t c = ids.size(); c < dec.calls.size(); ++c)
      for (const Chunk &ch : dec.calls[c].chunks)
        EXPECT_NE(ch.slot, slot) << "finished row " << i << " ran in call " << c;
  }
  EXPECT_TRUE(someEarly);
}

TEST(GreedySearch, MinNewTokensHoldsEosBack) {
  FakeModel m;
  m.eosBias = 100.f; // eos always wins when allowed
  for (int64_t minNew : {0, 1, 5}) {
    GenerationConfig cfg;
    cfg.maxNewTokens = 10;
    cfg.minNewTokens = minNew;
    FakeDecoder dec(m, 8, 1, 64);
    std::vector<GenerationResult> got;
    ASSERT_TRUE(generate(dec, cfg, testutil::makePrompts(2, 3, m.vocab).prompts, got).isOk());
    for (const GenerationResult &r : got) {
      const auto &ids = r.sequences[0].outputIds;
      EXPECT_EQ(int64_t(ids.size()), minNew + 1);
      EXPECT_EQ(ids.back(), 2);
      for (size_t k = 0; k + 1 < ids.size(); ++k)
        EXPECT_NE(ids[k], 2);
    }
  }
}

TEST(GreedySearch, SeveralEosIdsEachStop) {
  FakeModel m;
  m.eos = {2, 5, 8};
  m.eosBias = 3.0f;
  GenerationConfig cfg;
  cfg.maxNewTokens = 20;
  FakeDecoder dec(m, 8, 1, 64);
  std::vector<GenerationResult> got;
  ASSERT_TRUE(generate(dec, cfg, testutil::makePrompts(4, 8, m.vocab).prompts, got).isOk());
  std::set<int64_t> enders;
  for (const GenerationResult &r : got) {
    const auto &ids = r.sequences[0].outputIds;
    ASSERT_FALSE(ids.empty());
    for (size_t k = 0; k + 1 < ids.size(); ++k)
      EXPECT_TRUE(ids[k] != 2 && ids[k] != 5 && ids[k] != 8) << "generation went on after an eos";
    if (int64_t(ids.size()) < cfg.maxNewTokens)
      enders.insert(ids.back());
  }
  EXPECT_GE(enders.size(), 2u) << "expected rows to stop at different eos ids";
}

TEST(GreedySearch, RepetitionPenaltyCountsMaskedPromptTokens) {
  // A huge penalty on a token that only occurs at a masked (padding)
  // position: HF's history holds the pad tokens, so it is penalised too.
  FakeModel m;
  m.vocab = 10;
  GenerationConfig cfg;
  cfg.maxNewTokens = 1;
  std::vector<float> row(m.vocab);
  Prompt pr;
  pr.inputIds = {0, 0, 4};
  pr.attentionMask = {0, 0, 1};
  fake::fakeLogits(m, {}, {4}, row.data());
  int64_t best = std::max_element(row.begin(), row.end()) - row.begin();
  // Put the favourite at the masked position.
  pr.inputIds = {best, best, 4};
  if (best == 4)
    GTEST_SKIP() << "favourite is the prompt token itself";
  cfg.repetitionPenalty = 1000.0;
  FakeDecoder dec(m, 8, 1, 64);
  std::vector<GenerationResult> got;
  ASSERT_TRUE(generate(dec, cfg, {pr}, got).isOk());
  EXPECT_NE(got[0].sequences[0].outputIds[0], best);
  // The model never saw the masked positions.
  EXPECT_EQ(testutil::str(dec.calls[0].chunks[0].tokens), "[4]");
}
