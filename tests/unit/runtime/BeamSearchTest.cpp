// Beam search against the literal port of HF's _beam_search in
// ReferenceSearch.h, over a grid of options, plus properties that do not
// need the reference.
#include "FakeDecoder.h"
#include "ReferenceSearch.h"
#include "SearchTestUtil.h"
#include "runtime/search/Generate.h"
#include "runtime/search/LogitsProcessors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace genrt;
using fake::FakeDecoder;
using fake::FakeModel;

namespace {

std::string describe(const GenerationConfig &c, const FakeModel &m) {
  const char *es[] = {"false", "true", "never"};
  return "beams=" + std::to_string(c.numBeams) + " lp=" + std::to_string(c.lengthPenalty) +
         " es=" + es[int(c.earlyStopping)] + " nrs=" + std::to_string(c.numReturnSequences) +
         " ngram=" + std::to_string(c.noRepeatNgramSize) + " rep=" + std::to_string(c.repetitionPenalty) +
         " minNew=" + std::to_string(c.minNewTokens) + " eos=" + testutil::str(m.eos) +
         " eosBias=" + std::to_string(m.eosBias) + " seed=" + std::to_string(m.seed);
}

// Runs generate() over all prompts in one batch and compares with the
// reference run over the same batch; also the number of forward passes.
void checkAgainstReference(const FakeModel &m, const testutil::Prompts &p, const GenerationConfig &cfg,
                           bool encoderDecoder = false) {
  FakeDecoder dec(m, /*maxBatch=*/8, /*maxBeams=*/4, /*maxLength=*/64, encoderDecoder);
  std::vector<GenerationResult> got;
  Status s = generate(dec, cfg, p.prompts, got);
  ASSERT_TRUE(s.isOk()) << s.message();
  ref::Run want = ref::beamSearch(m, p.inputs, cfg, cfg.effectiveEos(dec.info()));
  std::string what = describe(cfg, m);
  testutil::expectSame(got, want, 1e-6f, what);
  EXPECT_EQ(int(dec.calls.size()), want.modelCalls) << what;
}

} // namespace

TEST(BeamSearch, MatchesReferenceOverOptionGrid) {
  int runs = 0;
  for (int64_t beams : {2, 3, 4})
    for (EarlyStopping es : {EarlyStopping::False, EarlyStopping::True, EarlyStopping::Never})
      for (double lp : {1.0, 0.6, 2.0, -0.5})
        for (int eosSet = 0; eosSet < 2; ++eosSet)
          for (int procs = 0; procs < 4; ++procs) {
            FakeModel m;
            m.vocab = 24;
            m.seed = uint64_t(100 + runs);
            m.eos = eosSet ? std::vector<int64_t>{2, 7} : std::vector<int64_t>{2};
            m.eosBias = (runs % 3 == 0) ? 0.f : 2.0f;
            GenerationConfig cfg;
            cfg.numBeams = beams;
            cfg.earlyStopping = es;
            cfg.lengthPenalty = lp;
            cfg.maxNewTokens = 10;
            cfg.numReturnSequences = (runs % 2) ? beams : 1;
            cfg.noRepeatNgramSize = (procs & 1) ? 2 : 0;
            cfg.repetitionPenalty = (procs & 2) ? 1.3 : 1.0;
            cfg.minNewTokens = (runs % 4 == 1) ? 3 : 0;
            bool leftPad = runs % 2 == 0;
            testutil::Prompts p = testutil::makePrompts(uint64_t(runs), 3, m.vocab, 6, leftPad);
            checkAgainstReference(m, p, cfg);
            ++runs;
          }
  EXPECT_EQ(runs, 3 * 3 * 4 * 2 * 4);
}

TEST(BeamSearch, LongerRunsWithThreeEosIds) {
  for (int seed = 0; seed < 12; ++seed) {
    FakeModel m;
    m.vocab = 50;
    m.seed = uint64_t(7000 + seed);
    m.eos = {2, 5, 11};
    m.eosBias = 1.0f;
    GenerationConfig cfg;
    cfg.numBeams = 4;
    cfg.maxNewTokens = 24;
    cfg.numReturnSequences = 2;
    cfg.noRepeatNgramSize = 3;
    cfg.lengthPenalty = seed % 2 ? 1.0 : 0.6;
    cfg.earlyStopping = EarlyStopping(seed % 3);
    checkAgainstReference(m, testutil::makePrompts(uint64_t(seed), 4, m.vocab, 8, true), cfg);
  }
}

TEST(BeamSearch, EosTokenIdOptionOverridesModel) {
  FakeModel m;
  m.eosBias = 2.0f;
  GenerationConfig cfg;
  cfg.numBeams = 3;
  cfg.maxNewTokens = 8;
  cfg.eosTokenIds = {4, 9};
  // The reference gets the overriding ids; the fake's eosBias stays on id 2,
  // which must now be an ordinary token.
  checkAgainstReference(m, testutil::makePrompts(5, 3, m.vocab), cfg);
}

TEST(BeamSearch, EncoderDecoderMatchesReference) {
  for (int seed = 0; seed < 6; ++seed) {
    FakeModel m;
    m.seed = uint64_t(900 + seed);
    m.eosBias = 1.5f;
    GenerationConfig cfg;
    cfg.numBeams = 3;
    cfg.maxNewTokens = 9;
    cfg.numReturnSequences = 3;
    cfg.noRepeatNgramSize = 2;
    checkAgainstReference(m, testutil::makePrompts(uint64_t(seed), 3, m.vocab, 6, false, true), cfg, true);
  }
}

TEST(BeamSearch, BatchOfOneMatchesReferenceBatchOfOne) {
  FakeModel m;
  m.eosBias = 1.5f;
  GenerationConfig cfg;
  cfg.numBeams = 4;
  cfg.maxNewTokens = 12;
  cfg.batchSize = 1;
  testutil::Prompts p = testutil::makePrompts(42, 5, m.vocab);
  FakeDecoder dec(m, 8, 4, 64);
  std::vector<GenerationResult> got;
  ASSERT_TRUE(generate(dec, cfg, p.prompts, got).isOk());
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    ref::Run want = ref::beamSearch(m, {p.inputs[i]}, cfg, m.eos);
    testutil::expectSame({got[i]}, want, 1e-6f, "prompt " + std::to_string(i));
  }
}

// Scores are HF's: sum of the (processed) log-probs of the tokens divided by
// generated_length ** length_penalty. Recomputed here straight from the model.
TEST(BeamSearch, ScoreIsLengthPenalisedLogProb) {
  for (double lp : {1.0, 0.0, 0.6, 2.0}) {
    FakeModel m;
    m.eosBias = 1.5f;
    GenerationConfig cfg;
    cfg.numBeams = 4;
    cfg.numReturnSequences = 4;
    cfg.maxNewTokens = 10;
    cfg.lengthPenalty = lp;
    testutil::Prompts p = testutil::makePrompts(3, 3, m.vocab);
    FakeDecoder dec(m, 8, 4, 64);
    std::vector<GenerationResult> got;
    ASSERT_TRUE(generate(dec, cfg, p.prompts, got).isOk());
    for (size_t i = 0; i < got.size(); ++i) {
      double prev = 1e30;
      for (const GeneratedSequence &s : got[i].sequences) {
        ASSERT_FALSE(s.outputIds.empty());
        double sum = 0;
        std::vector<int64_t> seq = p.inputs[i].modelPrompt;
        for (int64_t tok : s.outputIds) {
          std::vector<float> row(m.vocab);
          fake::fakeLogits(m, {}, seq, row.data());
          search::logSoftmax(row.data(), m.vocab);
          sum += row[tok];
          seq.push_back(tok);
        }
        double want = sum / std::pow(double(s.outputIds.size()), lp);
        EXPECT_NEAR(s.score, want, 1e-4 * std::max(1.0, std::abs(want))) << "lp " << lp;
        EXPECT_LE(s.score, prev) << "sequences must be sorted best first";
        prev = s.score;
        bool endsWithEos = s.outputIds.back() == 2;
        EXPECT_TRUE(endsWithEos || int64_t(s.outputIds.size()) == cfg.maxNewTokens);
      }
    }
  }
}

// early_stopping=True stops as soon as num_beams hypotheses are done; False
// when the best running beam cannot beat them at its current length; "never"
// when it cannot at max length. So the steps run are ordered.
TEST(BeamSearch, EarlyStoppingModesStopInOrder) {
  int differ = 0;
  for (int seed = 0; seed < 20; ++seed) {
    FakeModel m;
    m.seed = uint64_t(300 + seed);
    m.eosBias = 2.5f;
    int calls[3];
    std::vector<GenerationResult> results[3];
    for (int es = 0; es < 3; ++es) {
      GenerationConfig cfg;
      cfg.numBeams = 3;
      cfg.maxNewTokens = 20;
      cfg.lengthPenalty = 1.0;
      cfg.earlyStopping = EarlyStopping(es);
      FakeDecoder dec(m, 8, 4, 64);
      ASSERT_TRUE(generate(dec, cfg, testutil::makePrompts(uint64_t(seed), 1, m.vocab).prompts, results[es]).isOk());
      calls[es] = int(dec.calls.size());
    }
    int t = calls[int(EarlyStopping::True)], f = calls[int(EarlyStopping::False)],
        n = calls[int(EarlyStopping::Never)];
    EXPECT_LE(t, f) << "seed " << seed;
    EXPECT_LE(f, n) << "seed " << seed;
    differ += (t != n);
    // A later stop only ever finds hypotheses at least as good.
    EXPECT_GE(results[int(EarlyStopping::Never)][0].sequences[0].score,
              results[int(EarlyStopping::True)][0].sequences[0].score - 1e-6);
  }
  EXPECT_GT(differ, 0) << "the grid never exercised early stopping";
}

TEST(BeamSearch, NoRepeatNgramNeverRepeats) {
  for (int64_t n : {1, 2, 3}) {
    FakeModel m;
    m.vocab = 12; // small, so repeats would be likely
    GenerationConfig cfg;
    cfg.numBeams = 3;
    cfg.numReturnSequences = 3;
    cfg.maxNewTokens = 10;
    cfg.noRepeatNgramSize = n;
    testutil::Prompts p = testutil::makePrompts(11, 4, m.vocab, 4, true);
    FakeDecoder dec(m, 8, 4, 64);
    std::vector<GenerationResult> got;
    ASSERT_TRUE(generate(dec, cfg, p.prompts, got).isOk());
    for (size_t i = 0; i < got.size(); ++i)
      for (const GeneratedSequence &s : got[i].sequences) {
        // The history includes the padded prompt, as in HF.
        std::vector<int64_t> all = p.prompts[i].inputIds;
        all.insert(all.end(), s.outputIds.begin(), s.outputIds.end());
        std::set<std::vector<int64_t>> seen;
        for (size_t k = 0; k + size_t(n) <= all.size(); ++k) {
          std::vector<int64_t> g(all.begin() + k, all.begin() + k + n);
          // n-grams wholly inside the prompt may repeat: the processor only
          // constrains what is generated.
          bool generated = k + size_t(n) > p.prompts[i].inputIds.size();
          if (generated) {
            EXPECT_EQ(seen.count(g), 0u) << "n=" << n << " repeats " << testutil::str(g) << " in "
                                         << testutil::str(all);
          }
          seen.insert(g);
        }
      }
  }
}

TEST(BeamSearch, CachesFollowBeams) {
  // With 4 beams over many steps, beams change parents: reorderSlots must
  // be used, and the fake's logits (a hash of the whole cached sequence)
  // prove the caches were moved right (the reference tests compare them).
  FakeModel m;
  GenerationConfig cfg;
  cfg.numBeams = 4;
  cfg.maxNewTokens = 12;
  FakeDecoder dec(m, 8, 4, 64);
  std::vector<GenerationResult> got;
  ASSERT_TRUE(generate(dec, cfg, testutil::makePrompts(1, 2, m.vocab).prompts, got).isOk());
  EXPECT_GT(dec.reorders, 2);
  // Prefill: one call, one chunk per prompt; later calls: one token per beam.
  ASSERT_FALSE(dec.calls.empty());
  EXPECT_EQ(dec.calls[0].chunks.size(), 2u);
  for (size_t c = 1; c < dec.calls.size(); ++c) {
    EXPECT_EQ(dec.calls[c].chunks.size(), 8u);
    for (const Chunk &ch : dec.calls[c].chunks)
      EXPECT_EQ(ch.tokens.size(), 1u);
  }
}

// A vocabulary smaller than the candidate count: the first step must take
// candidates from beams that still have their -1e9 start score (and whose
// slots hold nothing but the prompt).
TEST(BeamSearch, TinyVocabulary) {
  for (int seed = 0; seed < 10; ++seed) {
    FakeModel m;
    // Three tokens for four beams: beam 0 alone cannot fill the running
    // beams (ties at -1e9 otherwise favour beam 0's masked candidates).
    m.vocab = seed % 2 ? 3 : 4;
    m.seed = uint64_t(40 + seed);
    m.eos = seed % 2 ? std::vector<int64_t>{2} : std::vector<int64_t>{2, 3};
    GenerationConfig cfg;
    cfg.numBeams = 4;
    cfg.numReturnSequences = 4;
    cfg.maxNewTokens = 6;
    cfg.earlyStopping = EarlyStopping(seed % 3);
    testutil::Prompts p;
    p.prompts = {{{1, 2}, {}}, {{0}, {}}};
    p.inputs = {{{1, 2}, {1, 2}, {}}, {{0}, {0}, {}}};
    checkAgainstReference(m, p, cfg);
  }
}
