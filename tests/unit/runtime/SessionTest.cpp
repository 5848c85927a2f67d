// The device-neutral Session over a recording executor: which program runs,
// with which symbols, ids, positions, logit rows and attention context;
// chunked prefill; beam reordering and cross-cache entries. The executor
// answers with logits that encode (run, row), so misplaced rows show.
#include "runtime/BeamChoice.h"
#include "runtime/GreedyChoice.h"
#include "runtime/Session.h"

#include <gtest/gtest.h>

namespace {

using namespace genrt;

constexpr int64_t kVocab = 5;

class RecordingExecutor : public Executor {
public:
  std::vector<ProgramRun> runs, encodes;
  std::vector<std::vector<int32_t>> copies;
  std::string deviceName() const override { return "test"; }
  Status run(const ProgramRun &r, float *logits) override {
    runs.push_back(r);
    int64_t rows = r.kind == ProgramKind::Decode ? int64_t(r.inputIds.size()) : int64_t(r.logitRows.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t v = 0; v < kVocab; ++v) // the row's last token id, so the caller can tell rows apart
        logits[i * kVocab + v] = float(r.inputIds[r.kind == ProgramKind::Decode ? i : r.logitRows[i]]);
    return Status::ok();
  }
  Status encode(const ProgramRun &r) override {
    encodes.push_back(r);
    return Status::ok();
  }
  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src, const std::vector<int64_t> &,
                   const std::vector<int64_t> &f) override {
    copies.push_back(dst);
    copies.push_back(src);
    froms.push_back(f);
    return Status::ok();
  }
  std::vector<std::vector<int64_t>> froms;
  int64_t memoryBytes() const override { return 42; }
};

std::shared_ptr<Plan> makePlan(bool encoderDecoder, int64_t maxTokens) {
  auto p = std::make_shared<Plan>();
  p->model.vocabSize = kVocab;
  p->model.maxBatch = 2;
  p->model.maxBeams = 2;
  p->model.maxLength = 16;
  p->model.encoderDecoder = encoderDecoder;
  p->maxTokens = maxTokens;
  p->kv.slots = 4;
  p->kv.maxLength = 16;
  p->kv.addLayer(1, 8, 0);
  if (encoderDecoder) {
    // Sources bounded apart from the decoder's 16 positions.
    p->model.maxSourceLength = 12;
    p->kv.maxSourceLength = 12;
    p->kv.crossEntries = 2;
    p->kv.crossLayers.push_back({1, 8});
  }
  for (const char *n : {"prefill", "decode_step", "encode"}) {
    Program &prog = p->programs[n];
    prog.name = n;
    prog.maxSymbols = {{"tokens", std::string(n) == "decode_step" ? 4 : maxTokens}, {"rows", 4}, {"src_tokens", 16}};
  }
  return p;
}

struct Fixture {
  RecordingExecutor *exec;
  std::unique_ptr<Session> session;
  explicit Fixture(bool encDec = false, int64_t maxTokens = 8) {
    auto e = std::make_unique<RecordingExecutor>();
    exec = e.get();
    session = std::make_unique<Session>(makePlan(encDec, maxTokens), std::move(e));
  }
};

TEST(Session, PrefillPacksChunksAndDecodeUsesDecodeStep) {
  Fixture f;
  std::vector<float> logits(2 * kVocab, -1.f);
  ASSERT_TRUE(f.session->forward({{1, {3, 4, 2}}, {0, {1, 0}}}, logits.data()));
  ASSERT_EQ(f.exec->runs.size(), 1u);
  const ProgramRun &r = f.exec->runs[0];
  EXPECT_EQ(r.kind, ProgramKind::Prefill);
  EXPECT_EQ(r.program->name, "prefill");
  EXPECT_EQ(r.inputIds, (std::vector<int64_t>{3, 4, 2, 1, 0}));
  EXPECT_EQ(r.positions, (std::vector<int64_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(r.logitRows, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(r.symbols.at("tokens"), 5);
  EXPECT_EQ(r.symbols.at("rows"), 2);
  EXPECT_EQ(r.attention.tokens[3].slot, 0);
  EXPECT_EQ(r.attention.tokens[1].slot, 1);
  EXPECT_EQ(logits[0], 2.f); // chunk 0 ends with token 2
  EXPECT_EQ(logits[kVocab], 0.f);
  EXPECT_EQ(f.session->slotLength(1), 3);
  EXPECT_EQ(f.session->slotLength(0), 2);

  ASSERT_TRUE(f.session->forward({{0, {4}}, {1, {3}}}, logits.data()));
  const ProgramRun &d = f.exec->runs[1];
  EXPECT_EQ(d.kind, ProgramKind::Decode);
  EXPECT_EQ(d.positions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(d.attention.tokens[0].cachedBefore, 2);
  EXPECT_EQ(d.attention.tokens[1].cachedBefore, 3);
  EXPECT_EQ(logits[0], 4.f);
  EXPECT_EQ(logits[kVocab], 3.f);
}

TEST(Session, LongPromptIsPrefilledInPiecesAndOnlyTheLastGivesLogits) {
  Fixture f(false, /*maxTokens=*/4);
  std::vector<float> logits(2 * kVocab, -1.f);
  ASSERT_TRUE(f.session->forward({{0, {1, 1, 1, 1, 1, 2}}, {2, {3, 4, 0}}}, logits.data()));
  ASSERT_EQ(f.exec->runs.size(), 3u);
  EXPECT_EQ(f.exec->runs[0].inputIds.size(), 4u);
  EXPECT_TRUE(f.exec->runs[0].logitRows.empty());
  // Second run: the prompt's last 2 tokens; the other chunk would leave a
  // one-token piece (2 + 1), so it starts the third run whole.
  EXPECT_EQ(f.exec->runs[1].positions, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(f.exec->runs[1].attention.tokens[0].cachedBefore, 4);
  EXPECT_EQ(f.exec->runs[1].logitRows, (std::vector<int64_t>{1}));
  EXPECT_EQ(f.exec->runs[2].positions, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(logits[0], 2.f);
  EXPECT_EQ(logits[kVocab], 0.f);
  EXPECT_EQ(f.session->slotLength(0), 6);
}

TEST(Session, RefusesBadChunksWithoutChangingSlots) {
  Fixture f;
  std::vector<float> logits(kVocab);
  EXPECT_FALSE(f.session->forward({{4, {1}}}, logits.data()));
  EXPECT_FALSE(f.session->forward({{0, {kVocab}}}, logits.data()));
  EXPECT_FALSE(f.session->forward({{0, {}}}, logits.data()));
  EXPECT_FALSE(f.session->forward({{0, std::vector<int64_t>(17, 1)}}, logits.data()));
  // Two chunks of one slot would start at the same position.
  std::vector<float> two(2 * kVocab);
  Status twice = f.session->forward({{0, {1}}, {0, {2}}}, two.data());
  EXPECT_FALSE(twice);
  EXPECT_NE(twice.message().find("slot 0 is in two chunks"), std::string::npos) << twice.message();
  EXPECT_TRUE(f.exec->runs.empty());
  EXPECT_EQ(f.session->slotLength(0), 0);
}

TEST(Session, ReorderMovesLengthsAndCrossEntries) {
  Fixture f(/*encoderDecoder=*/true);
  ASSERT_TRUE(f.session->encode({1, 2, 3}, {0, 1}));
  ASSERT_TRUE(f.session->encode({4, 4}, {2, 3}));
  ASSERT_EQ(f.exec->encodes.size(), 2u);
  EXPECT_EQ(f.exec->encodes[0].attention.segments[0].entry, 0);
  EXPECT_EQ(f.exec->encodes[1].attention.segments[0].entry, 1);
  EXPECT_EQ(f.exec->encodes[1].attention.segments[0].len, 2);
  std::vector<float> logits(4 * kVocab);
  ASSERT_TRUE(f.session->forward({{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}}, logits.data()));
  EXPECT_EQ(f.exec->runs[0].attention.crossEntryOfToken, (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(f.exec->runs[0].attention.crossLengths, (std::vector<int64_t>{3, 2}));
  // Slot 1 takes slot 2's contents: its cross entry follows.
  ASSERT_TRUE(f.session->reorderSlots({1}, {2}));
  ASSERT_TRUE(f.session->forward({{1, {0}}}, logits.data()));
  EXPECT_EQ(f.exec->runs[1].attention.crossEntryOfToken, (std::vector<int32_t>{1}));
  // Entry 0 is read by slot 0 alone now: re-encoding slot 0 reuses it.
  f.session->resetSlot(0);
  ASSERT_TRUE(f.session->encode({3}, {0}));
  EXPECT_EQ(f.exec->encodes.back().attention.segments[0].entry, 0);
  // Slot 1 reads entry 0 too, slots 2 and 3 entry 1: no entry is free for
  // slot 0 alone.
  ASSERT_TRUE(f.session->reorderSlots({1}, {0}));
  Status s = f.session->encode({3}, {0});
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("every cross-attention cache entry is in use"), std::string::npos);
}

// What a destination already holds of its source is at most what both
// hold: the executor copies from there on.
TEST(Session, ReorderPastASharedPrefix) {
  Fixture f(false, /*maxTokens=*/8);
  std::vector<float> logits(4 * kVocab);
  ASSERT_TRUE(f.session->forward({{0, {1, 2, 3}}, {1, {1, 2}}, {2, {1, 2, 3, 4}}}, logits.data()));
  ASSERT_TRUE(f.session->reorderSlots({1, 2, 3}, {0, 1, 0}, {2, 5, 3}));
  ASSERT_EQ(f.exec->froms.size(), 1u);
  // slot 1 (2 rows) from slot 0 (3): 2; slot 2 (4) from slot 1 (2): 5 -> 2;
  // slot 3 (empty) from slot 0: 0.
  EXPECT_EQ(f.exec->froms[0], (std::vector<int64_t>{2, 2, 0}));
  EXPECT_EQ(f.session->slotLength(1), 3);
  EXPECT_EQ(f.session->slotLength(2), 2);
  EXPECT_EQ(f.session->slotLength(3), 3);
  // The plain form shares nothing.
  ASSERT_TRUE(f.session->reorderSlots({0}, {2}));
  EXPECT_EQ(f.exec->froms[1], (std::vector<int64_t>{0}));
  EXPECT_FALSE(f.session->reorderSlots({0}, {1}, {}));
  Status twice = f.session->reorderSlots({3, 3}, {0, 1});
  EXPECT_FALSE(twice);
  EXPECT_NE(twice.message().find("a destination twice"), std::string::npos);
}

// A plan whose 2 x 2 beams share their prompt (genc --max-new-tokens 3)
// over an executor that reads by (region, index), as the CPU's does.
class SharingExecutor : public RecordingExecutor {
public:
  bool sharesPrompts() const override { return true; }
};

TEST(Session, SharedPromptsArePlacedAndReorderedByIndex) {
  auto plan = makePlan(false, 8);
  plan->model.maxNewTokens = 3;
  plan->kv.layers.clear();
  plan->kv.homes = 2;
  plan->kv.branchRows = 3;
  plan->kv.addLayer(1, 8, 0);
  auto e = std::make_unique<SharingExecutor>();
  SharingExecutor *exec = e.get();
  Session session(plan, std::move(e));
  std::vector<float> logits(4 * kVocab);
  ASSERT_TRUE(session.forward({{0, {1, 2, 3}}}, logits.data()));
  const ProgramRun &prefill = exec->runs.back();
  ASSERT_NE(prefill.attention.rows, nullptr);
  EXPECT_EQ(prefill.attention.tokens[2].write.region, 0); // a home
  EXPECT_EQ(prefill.attention.tokens[2].write.index, 2);
  ASSERT_TRUE(session.reorderSlots({1}, {0}, {0}));
  EXPECT_TRUE(exec->copies.empty()) << "a reorder moves pairs, not rows";
  EXPECT_EQ(session.slotLength(1), 3);
  ASSERT_TRUE(session.forward({{0, {4}}, {1, {2}}}, logits.data()));
  const ProgramRun &step = exec->runs.back();
  EXPECT_EQ(step.attention.tokens[0].write.region, 0);
  EXPECT_EQ(step.attention.tokens[0].write.index, 3);
  EXPECT_EQ(step.attention.tokens[1].write.region, plan->kv.branchOf(1));
  EXPECT_EQ(step.attention.tokens[1].write.index, 0);
  // Slot 1 reads its prompt in slot 0's home, then its own token.
  EXPECT_EQ(step.attention.cached(1, 2).region, 0);
  EXPECT_EQ(session.executor().sharesPrompts(), true);
  // Past the branch's 3 rows: refused before anything runs.
  ASSERT_TRUE(session.forward({{1, {1}}}, logits.data()));
  ASSERT_TRUE(session.forward({{1, {1}}}, logits.data()));
  const size_t runs = exec->runs.size();
  Status full = session.forward({{1, {1}}}, logits.data());
  EXPECT_FALSE(full);
  EXPECT_NE(full.message().find("--max-new-tokens"), std::string::npos) << full.message();
  EXPECT_EQ(exec->runs.size(), runs);
  EXPECT_EQ(session.slotLength(1), 6);
  // Both homes held (slot 2 starts a second prompt): a third fresh slot is refused.
  ASSERT_TRUE(session.forward({{2, {1}}}, logits.data()));
  Status noHome = session.forward({{3, {1}}}, logits.data());
  EXPECT_FALSE(noHome);
  EXPECT_NE(noHome.message().find("max batch"), std::string::npos) << noHome.message();
  session.resetSlot(2);
  EXPECT_TRUE(session.forward({{3, {1}}}, logits.data()));
  EXPECT_NE(session.kvReport().find("without sharing: each beam its own copy of the prompt"), std::string::npos)
      << session.kvReport();
}

// An executor that ranks beam candidates itself (as the GPU does), from
// logits that differ by row and token, by the host's rule.
class BeamRankingExecutor : public RecordingExecutor {
public:
  bool chooses = true;
  std::vector<size_t> rulesPerRun; // rules runBeams ranked, per run that chose
  static float logit(int64_t lastToken, int64_t v) { return float((lastToken + 2) * (v + 1) % 7) * 0.5f; }
  Status run(const ProgramRun &r, float *logits) override {
    runs.push_back(r);
    for (size_t i = 0; i < rowTokens(r).size(); ++i)
      for (int64_t v = 0; v < kVocab; ++v)
        logits[i * kVocab + v] = logit(rowTokens(r)[i], v);
    return Status::ok();
  }
  bool choosesBeams(int64_t k) const override { return chooses && k <= kVocab; }
  Status runBeams(const ProgramRun &r, const std::vector<BeamRow> &rows, int64_t k, int32_t *tokens,
                  float *scores) override {
    const std::vector<int64_t> last = rowTokens(r);
    if (last.empty() || rows.size() % last.size())
      return Status::error("runBeams: rules for no rows, or not the same number a row");
    const size_t n = rows.size() / last.size();
    std::vector<float> logits(static_cast<size_t>(kVocab));
    if (Status s = run(r, logits.data()); !s) // records the run; fills row 0, rewritten below
      return s;
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t v = 0; v < kVocab; ++v)
        logits[v] = logit(last[i / n], v);
      beamCandidates(logits.data(), kVocab, rows[i], k, tokens + i * k, scores + i * k);
    }
    rulesPerRun.push_back(rows.size());
    return Status::ok();
  }

protected:
  static std::vector<int64_t> rowTokens(const ProgramRun &r) {
    std::vector<int64_t> t;
    if (r.kind == ProgramKind::Decode)
      return r.inputIds;
    for (int64_t row : r.logitRows)
      t.push_back(r.inputIds[row]);
    return t;
  }
};

// A beam search's prompts (n rules a chunk) in runs of max_tokens: each run
// ranks the chunks that end in it, a run that ends none gives no logits,
// and the candidates are the host path's (forward, then the rule).
TEST(Session, PromptBeamsAreRankedByTheRunThatEndsEachChunk) {
  std::vector<Chunk> chunks = {{0, {1, 1, 1, 1, 1, 2}}, {2, {3, 4, 0}}};
  std::vector<BeamRow> rules(4);
  for (size_t i = 0; i < rules.size(); ++i) {
    rules[i].score = i % 2 ? -1.0e9f : 0.f; // beam 0, then HF's masked beam
    rules[i].banned = {int32_t(i % kVocab)};
    rules[i].renormalize = i == 3;
  }
  const int64_t k = 3;
  struct Ranked {
    BeamRankingExecutor *exec;
    std::unique_ptr<Session> session;
    std::vector<int32_t> tok;
    std::vector<float> sc;
  };
  auto rank = [&](bool chooses) {
    auto e = std::make_unique<BeamRankingExecutor>();
    e->chooses = chooses;
    Ranked r{e.get(), std::make_unique<Session>(makePlan(false, /*maxTokens=*/4), std::move(e)),
             std::vector<int32_t>(rules.size() * k, -1), std::vector<float>(rules.size() * k, 0.f)};
    EXPECT_TRUE(r.session->forwardBeams(chunks, rules, k, r.tok.data(), r.sc.data()));
    EXPECT_EQ(r.session->slotLength(0), 6);
    EXPECT_EQ(r.session->slotLength(2), 3);
    EXPECT_EQ(r.exec->runs.size(), 3u);
    return r;
  };
  const Ranked dev = rank(true), host = rank(false);
  EXPECT_EQ(dev.tok, host.tok);
  EXPECT_EQ(dev.sc, host.sc);
  // Run 0 (4 of chunk 0's tokens) ends no chunk; run 1 ends chunk 0, run 2
  // chunk 1: two rules each.
  EXPECT_EQ(dev.exec->rulesPerRun, (std::vector<size_t>{2, 2}));
  EXPECT_TRUE(host.exec->rulesPerRun.empty());
  // Chunk 0 ends with token 2: logits (4 (v + 1) mod 7) / 2 = 2, 0.5, 2.5,
  // 1, 3; rule 0 bans token 0.
  EXPECT_EQ(dev.tok[0], 4);
  EXPECT_EQ(dev.tok[1], 2);
  EXPECT_EQ(dev.tok[2], 3);
}

// The same executor choosing greedy tokens itself: a prompt's first tokens
// come from the run that ends each chunk, equal to the host's choice.
class GreedyChoosingExecutor : public BeamRankingExecutor {
public:
  std::vector<size_t> rowsPerRun;
  bool choosesGreedy() const override { return chooses; }
  Status runGreedy(const ProgramRun &r, int64_t *tokens, float *logprobs) override {
    const std::vector<int64_t> last = rowTokens(r);
    std::vector<float> logits(last.size() * kVocab);
    if (Status s = run(r, logits.data()); !s)
      return s;
    for (size_t i = 0; i < last.size(); ++i)
      greedyChoice(logits.data() + i * kVocab, kVocab, tokens[i], logprobs[i]);
    rowsPerRun.push_back(last.size());
    return Status::ok();
  }
};

TEST(Session, PromptGreedyTokensComeFromTheRunThatEndsEachChunk) {
  const std::vector<Chunk> chunks = {{0, {1, 1, 1, 1, 1, 2}}, {2, {3, 4, 0}}, {3, {4}}};
  auto choose = [&](bool chooses, std::vector<int64_t> &tok, std::vector<float> &lp, std::vector<size_t> &perRun) {
    auto e = std::make_unique<GreedyChoosingExecutor>();
    e->chooses = chooses;
    GreedyChoosingExecutor *exec = e.get();
    Session session(makePlan(false, /*maxTokens=*/4), std::move(e));
    tok.assign(chunks.size(), -1);
    lp.assign(chunks.size(), 0.f);
    ASSERT_TRUE(session.forwardGreedy(chunks, tok.data(), lp.data()));
    EXPECT_EQ(session.slotLength(0), 6);
    EXPECT_EQ(session.slotLength(2), 3);
    EXPECT_EQ(session.slotLength(3), 1);
    EXPECT_EQ(exec->runs.size(), 3u);
    perRun = exec->rowsPerRun;
  };
  std::vector<int64_t> devTok, hostTok;
  std::vector<float> devLp, hostLp;
  std::vector<size_t> devRuns, hostRuns;
  choose(true, devTok, devLp, devRuns);
  choose(false, hostTok, hostLp, hostRuns);
  EXPECT_EQ(devTok, hostTok);
  EXPECT_EQ(devLp, hostLp);
  // Run 0 (4 of chunk 0's tokens) ends none; run 1 ends chunk 0 and run 2
  // chunks 1 and 2.
  EXPECT_EQ(devRuns, (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(hostRuns.empty());
  // Chunk 0 ends with token 2: logits 2, 0.5, 2.5, 1, 3 -> token 4.
  EXPECT_EQ(devTok[0], 4);
}

TEST(Session, DecoderOnlyHasNoEncoderAndSymbolsAreChecked) {
  Fixture f(false, /*maxTokens=*/8);
  EXPECT_FALSE(f.session->encode({1}, {0}));
  // decode_step allows 4 tokens: five one-token chunks do not fit in slots anyway.
  std::vector<float> logits(4 * kVocab);
  EXPECT_FALSE(f.session->forward({{0, {1}}, {1, {1}}, {2, {1}}, {3, {1}}, {5, {1}}}, logits.data()));
}

} // namespace

TEST(Session, EncodeSourcesPacksRunsUpToSrcTokens) {
  Fixture f(/*encoderDecoder=*/true);
  // Two short sources: one @encode run, positions from 0 in each, a segment
  // (and a cross entry) each.
  Status st = f.session->encodeSources({{1, 2, 3}, {4, 0}}, {{0, 1}, {2, 3}});
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(f.exec->encodes.size(), 1u);
  const ProgramRun &r = f.exec->encodes[0];
  EXPECT_EQ(r.inputIds, (std::vector<int64_t>{1, 2, 3, 4, 0}));
  EXPECT_EQ(r.positions, (std::vector<int64_t>{0, 1, 2, 0, 1}));
  EXPECT_EQ(r.symbols.at("src_tokens"), 5);
  ASSERT_EQ(r.attention.segments.size(), 2u);
  EXPECT_EQ(r.attention.segments[0].start, 0);
  EXPECT_EQ(r.attention.segments[0].len, 3);
  EXPECT_EQ(r.attention.segments[1].start, 3);
  EXPECT_EQ(r.attention.segments[1].len, 2);
  EXPECT_NE(r.attention.segments[0].entry, r.attention.segments[1].entry);
  EXPECT_TRUE(segmentsFit(r.attention.segments, 5, makePlan(true, 8)->kv));
  std::vector<float> logits(4 * kVocab);
  ASSERT_TRUE(f.session->forward({{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}}, logits.data()));
  const int32_t e0 = r.attention.segments[0].entry, e1 = r.attention.segments[1].entry;
  EXPECT_EQ(f.exec->runs[0].attention.crossEntryOfToken, (std::vector<int32_t>{e0, e0, e1, e1}));
  EXPECT_EQ(f.exec->runs[0].attention.crossLengths[size_t(e0)], 3);
  EXPECT_EQ(f.exec->runs[0].attention.crossLengths[size_t(e1)], 2);

  // 10 + 8 tokens exceed the plan's 16 src_tokens: two runs.
  f.session->resetSlot(0);
  f.session->resetSlot(1);
  f.session->resetSlot(2);
  f.session->resetSlot(3);
  ASSERT_TRUE(f.session->encodeSources({std::vector<int64_t>(10, 3), std::vector<int64_t>(8, 2)}, {{0}, {1}}));
  ASSERT_EQ(f.exec->encodes.size(), 3u);
  EXPECT_EQ(f.exec->encodes[1].inputIds.size(), 10u);
  EXPECT_EQ(f.exec->encodes[2].inputIds.size(), 8u);
  EXPECT_EQ(f.exec->encodes[2].positions.front(), 0);
}

TEST(Session, EncodeSourcesRefusesBeforeRunningAny) {
  Fixture f(/*encoderDecoder=*/true);
  // Three sources, two cross entries.
  Status s = f.session->encodeSources({{1}, {2}, {3}}, {{0}, {1}, {2}});
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("every cross-attention cache entry is in use"), std::string::npos);
  // A bad token in the second source.
  s = f.session->encodeSources({{1}, {kVocab}}, {{0}, {1}});
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("outside the vocabulary"), std::string::npos);
  EXPECT_FALSE(f.session->encodeSources({{1}}, {{0}, {1}}));
  // A source past the plan's source length (12), though within its
  // decoder's (16) and its src_tokens (16).
  s = f.session->encodeSources({{1}, std::vector<int64_t>(13, 1)}, {{0}, {1}});
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("the source has 13 tokens, more than the plan's maximum source length 12"),
            std::string::npos);
  EXPECT_TRUE(f.exec->encodes.empty());
  EXPECT_TRUE(f.session->encodeSources({std::vector<int64_t>(12, 1)}, {{0}}));
}

TEST(Session, SegmentsFitRefusesOverlapsGapsAndSharedEntries) {
  KvLayout kv;
  kv.maxLength = 4; // the decoder's: not what bounds a source
  kv.maxSourceLength = 8;
  kv.crossEntries = 3;
  EXPECT_TRUE(segmentsFit({{0, 3, 0}, {3, 5, 2}}, 8, kv));
  EXPECT_FALSE(segmentsFit({{0, 3, 0}, {3, 5, 0}}, 8, kv)); // one entry twice
  EXPECT_FALSE(segmentsFit({{0, 3, 0}, {4, 4, 1}}, 8, kv)); // a gap
  EXPECT_FALSE(segmentsFit({{0, 3, 0}, {3, 5, 1}}, 9, kv)); // short of the run
  EXPECT_FALSE(segmentsFit({{0, 9, 0}}, 9, kv));            // longer than the cache
  EXPECT_FALSE(segmentsFit({{0, 2, 3}}, 2, kv));            // no such entry
  EXPECT_FALSE(segmentsFit({}, 0, kv));
}
