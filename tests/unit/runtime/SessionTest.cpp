// The device-neutral Session over a recording executor: which program runs,
// with which symbols, ids, positions, logit rows and attention context;
// chunked prefill; beam reordering and cross-cache entries. The executor
// answers with logits that encode (run, row), so misplaced rows show.
#include "runtime/choice/Beams.h"
#include "runtime/choice/Greedy.h"
#include "runtime/Session.h"
#include "runtime/choice/OnHost.h"

#include <gtest/gtest.h>

namespace {

using namespace genrt;

constexpr int64_t kVocab = 5;

class RecordingExecutor : public Executor {
public:
  std::vector<ProgramRun> runs, encodes;
  std::vector<std::vector<int32_t>> copies;
  std::string deviceName() const override { return "test"; }
  Status run(const ProgramRun &r, const ChoiceRequest &request, ChoiceAnswer *answer) override {
    if (request.kind != ChoiceKind::Logits)
      return Status::error("asked for a choice it does not make");
    runs.push_back(r);
    int64_t rows = r.kind == ProgramKind::Decode ? int64_t(r.inputIds.size()) : int64_t(r.logitRows.size());
    answer->reset(request, rows, kVocab);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t v = 0; v < kVocab; ++v) // the row's last token id, so the caller can tell rows apart
        answer->logits[i * kVocab + v] = float(r.inputIds[r.kind == ProgramKind::Decode ? i : r.logitRows[i]]);
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

// forward() asking for the logits, copied to the front of `logits`.
Status forwardLogits(Session &session, const std::vector<Chunk> &chunks, std::vector<float> &logits) {
  ChoiceAnswer answer;
  Status s = session.forward(chunks, ChoiceRequest::logits(), answer);
  if (s)
    std::copy(answer.logits.begin(), answer.logits.end(), logits.begin());
  return s;
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
  ASSERT_TRUE(forwardLogits(*f.session, {{1, {3, 4, 2}}, {0, {1, 0}}}, logits));
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

  ASSERT_TRUE(forwardLogits(*f.session, {{0, {4}}, {1, {3}}}, logits));
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
  ASSERT_TRUE(forwardLogits(*f.session, {{0, {1, 1, 1, 1, 1, 2}}, {2, {3, 4, 0}}}, logits));
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

// A prompt's log-probabilities: every token of an everyToken chunk gives a
// row, in order, beside the other chunks' rows; a run holds at most the
// plan's 4 rows, so the 7-token chunk goes in pieces of 3 (with the other
// chunk's row) and 4, and row order follows the chunks whatever run gives
// them.
TEST(Session, EveryTokenChunksGiveARowATokenAtMostTheRowsARun) {
  Fixture f(false, /*maxTokens=*/8);
  Chunk scored{0, {1, 2, 3, 4, 0, 1, 2}};
  scored.everyToken = true;
  std::vector<float> logits(8 * kVocab, -1.f);
  ASSERT_TRUE(forwardLogits(*f.session, {{1, {4}}, scored}, logits));
  ASSERT_EQ(f.exec->runs.size(), 2u);
  EXPECT_EQ(f.exec->runs[0].inputIds, (std::vector<int64_t>{4, 1, 2, 3}));
  EXPECT_EQ(f.exec->runs[0].logitRows, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(f.exec->runs[0].symbols.at("rows"), 4);
  EXPECT_EQ(f.exec->runs[1].positions, (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_EQ(f.exec->runs[1].logitRows, (std::vector<int64_t>{0, 1, 2, 3}));
  const std::vector<float> want{4, 1, 2, 3, 4, 0, 1, 2}; // each row's token
  for (size_t r = 0; r < want.size(); ++r)
    EXPECT_EQ(logits[r * kVocab], want[r]) << r;
  EXPECT_EQ(f.session->slotLength(0), 7);

  // Only with a logits request; and it gives output.
  ChoiceAnswer answer;
  Chunk more{2, {1, 2}};
  more.everyToken = true;
  EXPECT_FALSE(f.session->forward({more}, ChoiceRequest::greedy(), answer));
  more.output = false;
  EXPECT_FALSE(f.session->forward({more}, ChoiceRequest::logits(), answer));
  EXPECT_EQ(f.exec->runs.size(), 2u);
}

TEST(Session, RefusesBadChunksWithoutChangingSlots) {
  Fixture f;
  std::vector<float> logits(kVocab);
  EXPECT_FALSE(forwardLogits(*f.session, {{4, {1}}}, logits));
  EXPECT_FALSE(forwardLogits(*f.session, {{0, {kVocab}}}, logits));
  EXPECT_FALSE(forwardLogits(*f.session, {{0, {}}}, logits));
  EXPECT_FALSE(forwardLogits(*f.session, {{0, std::vector<int64_t>(17, 1)}}, logits));
  // Two chunks of one slot would start at the same position.
  std::vector<float> two(2 * kVocab);
  Status twice = forwardLogits(*f.session, {{0, {1}}, {0, {2}}}, two);
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
  ASSERT_TRUE(forwardLogits(*f.session, {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}}, logits));
  EXPECT_EQ(f.exec->runs[0].attention.crossEntryOfToken, (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(f.exec->runs[0].attention.crossLengths, (std::vector<int64_t>{3, 2}));
  // Slot 1 takes slot 2's contents: its cross entry follows.
  ASSERT_TRUE(f.session->reorderSlots({1}, {2}));
  ASSERT_TRUE(forwardLogits(*f.session, {{1, {0}}}, logits));
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
  ASSERT_TRUE(forwardLogits(*f.session, {{0, {1, 2, 3}}, {1, {1, 2}}, {2, {1, 2, 3, 4}}}, logits));
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
  ASSERT_TRUE(forwardLogits(session, {{0, {1, 2, 3}}}, logits));
  const ProgramRun &prefill = exec->runs.back();
  ASSERT_NE(prefill.attention.rows, nullptr);
  EXPECT_EQ(prefill.attention.tokens[2].write.region, 0); // a home
  EXPECT_EQ(prefill.attention.tokens[2].write.index, 2);
  ASSERT_TRUE(session.reorderSlots({1}, {0}, {0}));
  EXPECT_TRUE(exec->copies.empty()) << "a reorder moves pairs, not rows";
  EXPECT_EQ(session.slotLength(1), 3);
  ASSERT_TRUE(forwardLogits(session, {{0, {4}}, {1, {2}}}, logits));
  const ProgramRun &step = exec->runs.back();
  EXPECT_EQ(step.attention.tokens[0].write.region, 0);
  EXPECT_EQ(step.attention.tokens[0].write.index, 3);
  EXPECT_EQ(step.attention.tokens[1].write.region, plan->kv.branchOf(1));
  EXPECT_EQ(step.attention.tokens[1].write.index, 0);
  // Slot 1 reads its prompt in slot 0's home, then its own token.
  EXPECT_EQ(step.attention.cached(1, 2).region, 0);
  EXPECT_EQ(session.executor().sharesPrompts(), true);
  // Past the branch's 3 rows: refused before anything runs.
  ASSERT_TRUE(forwardLogits(session, {{1, {1}}}, logits));
  ASSERT_TRUE(forwardLogits(session, {{1, {1}}}, logits));
  const size_t runs = exec->runs.size();
  Status full = forwardLogits(session, {{1, {1}}}, logits);
  EXPECT_FALSE(full);
  EXPECT_NE(full.message().find("--max-new-tokens"), std::string::npos) << full.message();
  EXPECT_EQ(exec->runs.size(), runs);
  EXPECT_EQ(session.slotLength(1), 6);
  // Both homes held (slot 2 starts a second prompt): a third fresh slot is refused.
  ASSERT_TRUE(forwardLogits(session, {{2, {1}}}, logits));
  Status noHome = forwardLogits(session, {{3, {1}}}, logits);
  EXPECT_FALSE(noHome);
  EXPECT_NE(noHome.message().find("max batch"), std::string::npos) << noHome.message();
  session.resetSlot(2);
  EXPECT_TRUE(forwardLogits(session, {{3, {1}}}, logits));
  EXPECT_NE(session.kvReport().find("without sharing: each beam its own copy of the prompt"), std::string::npos)
      << session.kvReport();
}

// An executor that ranks beam candidates itself (as the GPU does), from
// logits that differ by row and token, by the host's rule.
class BeamRankingExecutor : public RecordingExecutor {
public:
  bool chooseBeams = true, chooseGreedy = false;
  std::vector<size_t> rulesPerRun; // rules it ranked, per run that chose beams
  std::vector<size_t> rowsPerRun;  // rows it chose greedy tokens for, per run
  static float logit(int64_t lastToken, int64_t v) { return float((lastToken + 2) * (v + 1) % 7) * 0.5f; }
  bool chooses(const ChoiceRequest &req, ProgramKind) const override {
    return req.kind == ChoiceKind::Logits || (chooseBeams && req.kind == ChoiceKind::Beams && req.k <= kVocab) ||
           (chooseGreedy && req.kind == ChoiceKind::Greedy);
  }
  // The logits, or the choice made from them by the host's rule (as the
  // GPU's kernels reproduce it).
  Status run(const ProgramRun &r, const ChoiceRequest &req, ChoiceAnswer *answer) override {
    if (!chooses(req, r.kind))
      return Status::error("asked for a choice it does not make");
    runs.push_back(r);
    const std::vector<int64_t> last = rowTokens(r);
    std::vector<float> logits(last.size() * kVocab);
    for (size_t i = 0; i < last.size(); ++i)
      for (int64_t v = 0; v < kVocab; ++v)
        logits[i * kVocab + v] = logit(last[i], v);
    if (req.kind == ChoiceKind::Beams)
      rulesPerRun.push_back(req.rules.size());
    if (req.kind == ChoiceKind::Greedy)
      rowsPerRun.push_back(last.size());
    return answerOnHost(req, logits.data(), int64_t(last.size()), kVocab, *answer);
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
    e->chooseBeams = chooses;
    Ranked r{e.get(), std::make_unique<Session>(makePlan(false, /*maxTokens=*/4), std::move(e)), {}, {}};
    ChoiceAnswer answer;
    EXPECT_TRUE(r.session->forward(chunks, ChoiceRequest::beams(rules, k), answer));
    r.tok = answer.candidates;
    r.sc = answer.scores;
    EXPECT_EQ(r.tok.size(), rules.size() * k);
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
TEST(Session, PromptGreedyTokensComeFromTheRunThatEndsEachChunk) {
  const std::vector<Chunk> chunks = {{0, {1, 1, 1, 1, 1, 2}}, {2, {3, 4, 0}}, {3, {4}}};
  auto choose = [&](bool chooses, std::vector<int64_t> &tok, std::vector<float> &lp, std::vector<size_t> &perRun) {
    auto e = std::make_unique<BeamRankingExecutor>();
    e->chooseGreedy = chooses;
    BeamRankingExecutor *exec = e.get();
    Session session(makePlan(false, /*maxTokens=*/4), std::move(e));
    ChoiceAnswer answer;
    ASSERT_TRUE(session.forward(chunks, ChoiceRequest::greedy(), answer));
    tok = answer.tokens;
    lp = answer.logprobs;
    EXPECT_EQ(tok.size(), chunks.size());
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

// A chunk that asks for no output (a prompt part the scheduler runs for its
// cache) gives no row: the answer's rows are the other chunks', in order.
TEST(Session, ChunksWithoutOutputGiveNoRow) {
  Fixture f(false, /*maxTokens=*/8);
  ChoiceAnswer answer;
  std::vector<Chunk> chunks = {{0, {1, 2}, /*output=*/false}, {1, {3, 4}}, {2, {2}}};
  ASSERT_TRUE(f.session->forward(chunks, ChoiceRequest::logits(), answer));
  ASSERT_EQ(answer.logits.size(), size_t(2 * kVocab));
  EXPECT_EQ(answer.logits[0], 4.f); // chunk 1 ends with token 4
  EXPECT_EQ(answer.logits[kVocab], 2.f);
  EXPECT_EQ(f.exec->runs.back().logitRows, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(f.session->slotLength(0), 2);
  // Only prompt parts: a prefill run with no rows, nothing back.
  ASSERT_TRUE(f.session->forward({{0, {3}, false}}, ChoiceRequest::greedy(), answer));
  EXPECT_TRUE(answer.tokens.empty());
  EXPECT_EQ(f.exec->runs.back().kind, ProgramKind::Prefill);
  EXPECT_EQ(f.session->slotLength(0), 3);
}

// A request that does not fit the rows is refused before anything runs.
TEST(Session, RefusesARequestThatDoesNotFitTheRows) {
  Fixture f;
  ChoiceAnswer answer;
  Status s = f.session->forward({{0, {1}}, {1, {2}}}, ChoiceRequest::beams(std::vector<BeamRow>(3), 2), answer);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("3 rules for 2 rows"), std::string::npos) << s.message();
  s = f.session->forward({{0, {1}}}, ChoiceRequest::beams(std::vector<BeamRow>(1), kVocab + 1), answer);
  EXPECT_FALSE(s);
  s = f.session->forward({{0, {1}}, {1, {2}}}, ChoiceRequest::tokens(std::vector<BeamRow>(2), {0.5}, SampleRule{}),
                         answer);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("give one of each a row"), std::string::npos) << s.message();
  EXPECT_TRUE(f.exec->runs.empty());
  EXPECT_EQ(f.session->slotLength(0), 0);
}

// Tokens by the sampling rule: an executor that answers them in decode
// steps only gets those; the prompt's runs are answered on the host, with
// the same tokens.
class TokenChoosingExecutor : public BeamRankingExecutor {
public:
  std::vector<ProgramKind> choseIn;
  bool chooses(const ChoiceRequest &req, ProgramKind kind) const override {
    return req.kind == ChoiceKind::Logits || (req.kind == ChoiceKind::Tokens && kind == ProgramKind::Decode);
  }
  Status run(const ProgramRun &r, const ChoiceRequest &req, ChoiceAnswer *answer) override {
    if (req.kind == ChoiceKind::Tokens)
      choseIn.push_back(r.kind);
    return BeamRankingExecutor::run(r, req, answer);
  }
};

TEST(Session, TokensAreChosenOnTheDeviceInStepsAndOnTheHostInPrompts) {
  SampleRule rule;
  rule.sample = true;
  rule.topK = 3;
  std::vector<BeamRow> rows(2);
  rows[1].banned = {4};
  const std::vector<double> draws = {0.25, 0.75};
  auto e = std::make_unique<TokenChoosingExecutor>();
  TokenChoosingExecutor *exec = e.get();
  Session session(makePlan(false, /*maxTokens=*/4), std::move(e));
  ChoiceAnswer prompt, step, host;
  ASSERT_TRUE(session.forward({{0, {1, 1, 1, 2}}, {1, {3, 0}}}, ChoiceRequest::tokens(rows, draws, rule), prompt));
  EXPECT_TRUE(exec->choseIn.empty()) << "a prompt's runs are answered on the host";
  ASSERT_TRUE(session.forward({{0, {2}}, {1, {0}}}, ChoiceRequest::tokens(rows, draws, rule), step));
  EXPECT_EQ(exec->choseIn, (std::vector<ProgramKind>{ProgramKind::Decode}));
  // Both answers are the host rule's over the same logits (last tokens 2, 0).
  std::vector<float> logits(2 * kVocab);
  for (int64_t v = 0; v < kVocab; ++v) {
    logits[v] = BeamRankingExecutor::logit(2, v);
    logits[kVocab + v] = BeamRankingExecutor::logit(0, v);
  }
  ASSERT_TRUE(answerOnHost(ChoiceRequest::tokens(rows, draws, rule), logits.data(), 2, kVocab, host));
  EXPECT_EQ(prompt.tokens, host.tokens);
  EXPECT_EQ(step.tokens, host.tokens);
  EXPECT_EQ(step.logprobs, host.logprobs);
  EXPECT_NE(step.tokens[1], 4) << "row 1 bans token 4";
}

TEST(Session, DecoderOnlyHasNoEncoderAndSymbolsAreChecked) {
  Fixture f(false, /*maxTokens=*/8);
  EXPECT_FALSE(f.session->encode({1}, {0}));
  // decode_step allows 4 tokens: five one-token chunks do not fit in slots anyway.
  std::vector<float> logits(4 * kVocab);
  EXPECT_FALSE(forwardLogits(*f.session, {{0, {1}}, {1, {1}}, {2, {1}}, {3, {1}}, {5, {1}}}, logits));
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
  ASSERT_TRUE(forwardLogits(*f.session, {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}}, logits));
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
