#include "runtime/search/DecoderCalls.h"

#include "runtime/GreedyChoice.h"

#include <algorithm>

namespace genrt {
namespace search {

size_t StepIO::add(int32_t slot, std::vector<int64_t> tokens, Want want) {
  chunks.push_back(Chunk{slot, std::move(tokens)});
  Entry e;
  e.want = want;
  entries.push_back(e);
  return chunks.size() - 1;
}

size_t StepIO::addRules(int32_t slot, std::vector<int64_t> tokens, Want want, const BeamRow *rows, int32_t n) {
  size_t i = add(slot, std::move(tokens), want);
  entries[i].firstRule = int32_t(rules.size());
  entries[i].rules = n;
  rules.insert(rules.end(), rows, rows + n);
  return i;
}

void StepIO::reorder(int32_t d, int32_t s, int64_t sharedPositions) {
  if (d == s)
    return;
  dst.push_back(d);
  src.push_back(s);
  shared.push_back(sharedPositions);
}

void StepIO::clearChunks() {
  chunks.clear();
  entries.clear();
  rules.clear();
  logits.clear();
  candTokens.clear();
  candScores.clear();
}

static bool sameRule(const SampleRule &a, const SampleRule &b) {
  return a.sample == b.sample && a.temperature == b.temperature && a.topK == b.topK && a.topP == b.topP &&
         a.minP == b.minP;
}

Status runReorders(Decoder &dec, StepIO &io) {
  if (io.dst.empty())
    return Status::ok();
  Status s = dec.reorderSlots(io.dst, io.src, io.shared);
  io.dst.clear();
  io.src.clear();
  io.shared.clear();
  return s;
}

// The chunks' common kind of answer, or Logits when they differ (None
// goes with any kind).
static Want commonWant(const StepIO &io) {
  Want kind = Want::None;
  const StepIO::Entry *first = nullptr;
  for (const StepIO::Entry &e : io.entries) {
    if (e.want == Want::None)
      continue;
    if (!first) {
      first = &e;
      kind = e.want;
      continue;
    }
    if (e.want != kind)
      return Want::Logits;
    if (kind == Want::Tokens && !sameRule(e.rule, first->rule))
      return Want::Logits;
    if (kind == Want::Beams && (e.k != first->k || e.rules != first->rules))
      return Want::Logits;
  }
  return kind;
}

// Every chunk's logits, and each chunk's choice made on the host.
static Status logitsStep(Decoder &dec, StepIO &io) {
  const int64_t V = dec.info().vocabSize;
  const size_t n = io.chunks.size();
  io.logits.resize(n * size_t(V));
  if (Status s = dec.forward(io.chunks, io.logits.data()); !s)
    return s;
  size_t cands = 0;
  for (const StepIO::Entry &e : io.entries)
    if (e.want == Want::Beams)
      cands += size_t(e.rules) * size_t(e.k);
  io.candTokens.resize(cands);
  io.candScores.resize(cands);
  std::vector<float> row;
  size_t nextCand = 0;
  for (size_t i = 0; i < n; ++i) {
    StepIO::Entry &e = io.entries[i];
    float *logits = io.logits.data() + i * size_t(V);
    e.logitsRow = int64_t(i);
    switch (e.want) {
    case Want::None:
    case Want::Logits:
      break;
    case Want::Greedy:
      greedyChoice(logits, V, e.token, e.logprob);
      break;
    case Want::Tokens:
      row.assign(logits, logits + V);
      chooseToken(row.data(), V, io.rules[size_t(e.firstRule)], e.rule, e.draw, e.token, e.logprob);
      break;
    case Want::Beams:
      e.firstCand = int64_t(nextCand);
      for (int32_t r = 0; r < e.rules; ++r) {
        row.assign(logits, logits + V);
        beamCandidates(row.data(), V, io.rules[size_t(e.firstRule + r)], e.k, io.candTokens.data() + nextCand,
                       io.candScores.data() + nextCand);
        nextCand += size_t(e.k);
      }
      break;
    }
  }
  return Status::ok();
}

Status runStep(Decoder &dec, StepIO &io) {
  if (Status s = runReorders(dec, io); !s)
    return s;
  const size_t n = io.chunks.size();
  if (n == 0)
    return Status::ok();
  const Want kind = commonWant(io);
  if (kind == Want::Logits)
    return logitsStep(dec, io);

  if (kind == Want::None || kind == Want::Greedy) { // ids cross, not logits
    std::vector<int64_t> tokens(n);
    std::vector<float> logprobs(n);
    if (Status s = dec.forwardGreedy(io.chunks, tokens.data(), logprobs.data()); !s)
      return s;
    for (size_t i = 0; i < n; ++i) {
      io.entries[i].token = tokens[i];
      io.entries[i].logprob = logprobs[i];
    }
    return Status::ok();
  }

  // Tokens or Beams under one rule set: chunks without output get empty rules.
  const StepIO::Entry *first = nullptr;
  for (const StepIO::Entry &e : io.entries)
    if (e.want != Want::None && !first)
      first = &e;
  const int32_t per = kind == Want::Tokens ? 1 : first->rules;
  std::vector<BeamRow> rows;
  rows.reserve(n * size_t(per));
  for (const StepIO::Entry &e : io.entries)
    for (int32_t r = 0; r < per; ++r)
      rows.push_back(e.want == Want::None ? BeamRow{} : io.rules[size_t(e.firstRule + r)]);

  if (kind == Want::Tokens) {
    const SampleRule rule = first->rule;
    std::vector<double> draws(n);
    for (size_t i = 0; i < n; ++i)
      draws[i] = io.entries[i].draw;
    std::vector<int64_t> tokens(n);
    std::vector<float> logprobs(n);
    if (Status s = dec.forwardTokens(io.chunks, rows, draws, rule, tokens.data(), logprobs.data()); !s)
      return s;
    for (size_t i = 0; i < n; ++i) {
      io.entries[i].token = tokens[i];
      io.entries[i].logprob = logprobs[i];
    }
    return Status::ok();
  }

  const int64_t k = first->k;
  io.candTokens.resize(rows.size() * size_t(k));
  io.candScores.resize(rows.size() * size_t(k));
  if (Status s = dec.forwardBeams(io.chunks, rows, k, io.candTokens.data(), io.candScores.data()); !s)
    return s;
  for (size_t i = 0; i < n; ++i)
    io.entries[i].firstCand = int64_t(i) * per * k;
  return Status::ok();
}

Status encodeSources(Decoder &dec, const std::vector<std::vector<int64_t>> &sources,
                     const std::vector<std::vector<int32_t>> &slots) {
  return dec.encodeSources(sources, slots);
}

bool decoderChoosesTokens(const Decoder &dec, const SampleRule &rule) { return dec.choosesTokens(rule); }

void resetSlots(Decoder &dec, const std::vector<int32_t> &slots) {
  for (int32_t s : slots)
    dec.resetSlot(s);
}

} // namespace search
} // namespace genrt
