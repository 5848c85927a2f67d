// GenerationObserver: what generate() reports while it runs is exactly what
// it returns, and it is reported as soon as it is final (counted in the fake
// decoder's forward calls at the moment of each report).
#include "FakeDecoder.h"
#include "SearchTestUtil.h"
#include "runtime/search/Generate.h"

#include <gtest/gtest.h>

#include <map>

using namespace genrt;
using fake::FakeDecoder;
using fake::FakeModel;

namespace {

struct Recorder : GenerationObserver {
  explicit Recorder(const FakeDecoder &d) : dec(d) {}
  const FakeDecoder &dec;
  std::map<std::pair<size_t, int64_t>, std::vector<int64_t>> tokens;
  std::map<std::pair<size_t, int64_t>, int> lastFlags;
  std::map<std::pair<size_t, int64_t>, GeneratedSequence> sequences;
  std::map<size_t, GenerationResult> done;
  std::map<size_t, size_t> doneAtCall; // forward calls made when the prompt was reported done
  std::vector<std::string> order;      // "t P S", "s P S", "d P"
  int64_t stopAfterTokens = -1;
  int64_t tokenCount = 0;

  void onToken(size_t p, int64_t s, int64_t token, bool last) override {
    EXPECT_FALSE(sequences.count({p, s})) << "token after the sequence ended";
    tokens[{p, s}].push_back(token);
    lastFlags[{p, s}] += last;
    ++tokenCount;
    order.push_back("t " + std::to_string(p) + " " + std::to_string(s));
  }
  void onSequence(size_t p, int64_t s, const GeneratedSequence &seq) override {
    EXPECT_FALSE(sequences.count({p, s})) << "sequence reported twice";
    sequences[{p, s}] = seq;
    order.push_back("s " + std::to_string(p) + " " + std::to_string(s));
  }
  void onPromptDone(size_t p, const GenerationResult &r) override {
    EXPECT_FALSE(done.count(p)) << "prompt reported done twice";
    done[p] = r;
    doneAtCall[p] = dec.calls.size();
    order.push_back("d " + std::to_string(p));
  }
  bool shouldStop() override { return stopAfterTokens >= 0 && tokenCount >= stopAfterTokens; }
};

// Everything reported equals what generate() returned.
void expectReportedEqualsResults(const Recorder &rec, const std::vector<GenerationResult> &got, bool tokens) {
  ASSERT_EQ(rec.done.size(), got.size());
  for (size_t p = 0; p < got.size(); ++p) {
    const GenerationResult &r = rec.done.at(p);
    ASSERT_EQ(r.sequences.size(), got[p].sequences.size());
    for (size_t s = 0; s < got[p].sequences.size(); ++s) {
      const GeneratedSequence &want = got[p].sequences[s];
      EXPECT_EQ(testutil::str(r.sequences[s].outputIds), testutil::str(want.outputIds));
      EXPECT_EQ(r.sequences[s].score, want.score);
      const GeneratedSequence &seq = rec.sequences.at({p, int64_t(s)});
      EXPECT_EQ(testutil::str(seq.outputIds), testutil::str(want.outputIds));
      EXPECT_EQ(seq.score, want.score);
      if (tokens) {
        EXPECT_EQ(testutil::str(rec.tokens.at({p, int64_t(s)})), testutil::str(want.outputIds));
        EXPECT_EQ(rec.lastFlags.at({p, int64_t(s)}), 1);
      }
    }
  }
  if (!tokens)
    EXPECT_TRUE(rec.tokens.empty()) << "beam search reports no tokens: they are not final";
}

} // namespace

TEST(Observer, GreedyReportsEveryTokenAndEachPromptWhenItEnds) {
  FakeModel m;
  m.eosBias = 2.5f; // some prompts end early, others run to max_new_tokens
  FakeDecoder dec(m, /*maxBatch=*/6, /*maxBeams=*/1, /*maxLength=*/64);
  GenerationConfig cfg;
  cfg.maxNewTokens = 12;
  std::vector<GenerationResult> got;
  Recorder rec(dec);
  testutil::Prompts p = testutil::makePrompts(7, 6, m.vocab);
  ASSERT_TRUE(generate(dec, cfg, p.prompts, got, nullptr, &rec).isOk());
  expectReportedEqualsResults(rec, got, /*tokens=*/true);
  bool someEarly = false;
  for (size_t i = 0; i < got.size(); ++i) {
    // Token t is chosen after forward call t + 1 (the prefill is call 1):
    // a prompt is done right after the call that produced its last token.
    EXPECT_EQ(rec.doneAtCall.at(i), got[i].sequences[0].outputIds.size()) << "prompt " << i;
    someEarly = someEarly || rec.doneAtCall.at(i) < dec.calls.size();
  }
  EXPECT_TRUE(someEarly) << "no prompt ended before the batch: the test proves nothing";
}

TEST(Observer, SamplingReportsEachSequenceThenThePrompt) {
  FakeModel m;
  m.eosBias = 2.0f;
  FakeDecoder dec(m, 4, 3, 64);
  GenerationConfig cfg;
  cfg.doSample = true;
  cfg.numReturnSequences = 3;
  cfg.maxNewTokens = 10;
  cfg.seed = 5;
  std::vector<GenerationResult> got;
  Recorder rec(dec);
  ASSERT_TRUE(generate(dec, cfg, testutil::makePrompts(3, 2, m.vocab).prompts, got, nullptr, &rec).isOk());
  expectReportedEqualsResults(rec, got, /*tokens=*/true);
  // Order: a sequence's tokens, then the sequence, and the prompt after all of its sequences.
  std::map<std::string, size_t> at;
  for (size_t k = 0; k < rec.order.size(); ++k)
    at.emplace(rec.order[k], k);
  for (size_t p = 0; p < 2; ++p)
    for (int64_t s = 0; s < 3; ++s) {
      std::string key = std::to_string(p) + " " + std::to_string(s);
      EXPECT_LT(at.at("t " + key), at.at("s " + key));
      EXPECT_LT(at.at("s " + key), at.at("d " + std::to_string(p)));
    }
}

TEST(Observer, BeamSearchReportsHypothesesOnceTheyCannotChange) {
  bool someEarly = false;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    FakeModel m;
    m.seed = seed;
    m.eosBias = 2.0f;
    FakeDecoder dec(m, 4, 3, 64);
    GenerationConfig cfg;
    cfg.numBeams = 3;
    cfg.numReturnSequences = 2;
    cfg.maxNewTokens = 16;
    cfg.earlyStopping = seed % 2 ? EarlyStopping::True : EarlyStopping::False;
    std::vector<GenerationResult> got;
    Recorder rec(dec);
    ASSERT_TRUE(generate(dec, cfg, testutil::makePrompts(seed, 4, m.vocab).prompts, got, nullptr, &rec).isOk());
    expectReportedEqualsResults(rec, got, /*tokens=*/false);
    for (auto &[p, call] : rec.doneAtCall)
      someEarly = someEarly || call < dec.calls.size();
  }
  EXPECT_TRUE(someEarly) << "every prompt was reported at the batch's end: nothing streamed early";
}

// keepResults() false (genrun --stream): the observer gets every prompt,
// exactly what a kept run returns, and generate() holds none of them.
TEST(Observer, DroppedResultsAreReportedAndNotReturned) {
  struct Dropping : Recorder {
    using Recorder::Recorder;
    bool keepResults() const override { return false; }
  };
  FakeModel m;
  m.eosBias = 2.0f;
  GenerationConfig cfg;
  cfg.numBeams = 2;
  cfg.maxNewTokens = 9;
  cfg.batchSize = 2; // several batches: results are dropped after each
  testutil::Prompts p = testutil::makePrompts(4, 7, m.vocab);
  FakeDecoder keptDec(m, 4, 2, 64), droppedDec(m, 4, 2, 64);
  std::vector<GenerationResult> kept, dropped{GenerationResult{}};
  GenerationStats keptStats, droppedStats;
  Recorder keptRec(keptDec);
  Dropping rec(droppedDec);
  ASSERT_TRUE(generate(keptDec, cfg, p.prompts, kept, &keptStats, &keptRec).isOk());
  ASSERT_TRUE(generate(droppedDec, cfg, p.prompts, dropped, &droppedStats, &rec).isOk());
  EXPECT_TRUE(dropped.empty());
  expectReportedEqualsResults(rec, kept, /*tokens=*/false);
  EXPECT_EQ(droppedStats.generatedTokens, keptStats.generatedTokens);
  EXPECT_GT(droppedStats.batches, 1);
}

TEST(Observer, StopEndsGenerationBeforeTheNextForwardCall) {
  FakeDecoder dec(FakeModel{}, 2, 1, 64);
  GenerationConfig cfg;
  cfg.maxNewTokens = 20;
  cfg.eosTokenIds = {39}; // rarely chosen: the run would be long
  std::vector<GenerationResult> got;
  Recorder rec(dec);
  rec.stopAfterTokens = 6; // 3 steps of 2 prompts
  Status s = generate(dec, cfg, testutil::makePrompts(1, 2, 40).prompts, got, nullptr, &rec);
  EXPECT_EQ(s.message(), "generation stopped");
  EXPECT_EQ(dec.calls.size(), 3u);
  EXPECT_TRUE(got.empty());
}

TEST(Observer, MessagesSpellOptionsAsAsked) {
  GenerationConfig cfg;
  cfg.maxNewTokens = 0;
  EXPECT_EQ(cfg.validate().message(), "--max-new-tokens must be at least 1, got 0");
  cfg.spelling = GenerationConfig::Spelling::Keywords;
  EXPECT_EQ(cfg.validate().message(), "max_new_tokens must be at least 1, got 0");
  cfg.maxNewTokens = 5;
  cfg.numReturnSequences = 2;
  EXPECT_EQ(cfg.validate().message(),
            "greedy search returns one sequence: num_return_sequences 2 needs num_beams >= it or do_sample");
}
