#include "runtime/search/DecoderCalls.h"

#include "runtime/choice/Beams.h"
#include "runtime/choice/Greedy.h"
#include "runtime/choice/Sampling.h"

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

// The output rows' logits, and each chunk's choice made on the host by the
// rules the decoder's own host path follows (runtime/choice/).
static Status logitsStep(Decoder &dec, StepIO &io) {
  const int64_t V = dec.info().vocabSize;
  ChoiceAnswer answer;
  if (Status s = dec.forward(io.chunks, ChoiceRequest::logits(), answer); !s)
    return s;
  io.logits = std::move(answer.logits);
  size_t cands = 0;
  for (const StepIO::Entry &e : io.entries)
    if (e.want == Want::Beams)
      cands += size_t(e.rules) * size_t(e.k);
  io.candTokens.resize(cands);
  io.candScores.resize(cands);
  std::vector<float> row;
  size_t nextCand = 0;
  int64_t r = 0;
  for (size_t i = 0; i < io.entries.size(); ++i) {
    StepIO::Entry &e = io.entries[i];
    if (io.chunks[i].everyToken) { // its rows, the last one its output row
      e.firstRow = r;
      r += int64_t(io.chunks[i].tokens.size());
      if (e.want != Want::None)
        e.logitsRow = r - 1;
    } else if (e.want != Want::None) {
      e.logitsRow = r++;
    }
    if (e.want == Want::None)
      continue;
    const float *logits = io.logits.data() + e.logitsRow * V;
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
      for (int32_t k = 0; k < e.rules; ++k) {
        row.assign(logits, logits + V);
        beamCandidates(row.data(), V, io.rules[size_t(e.firstRule + k)], e.k, io.candTokens.data() + nextCand,
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
  if (io.chunks.empty())
    return Status::ok();
  bool everyToken = false;
  for (size_t i = 0; i < io.chunks.size(); ++i) {
    io.chunks[i].output = io.entries[i].want != Want::None || io.chunks[i].everyToken;
    everyToken |= io.chunks[i].everyToken;
  }
  const Want kind = commonWant(io);
  if (kind == Want::Logits || kind == Want::None || everyToken)
    return logitsStep(dec, io);

  // One request of the chunks' common kind over the output rows, in order:
  // a decoder that chooses where the logits are sends back only the choices.
  const StepIO::Entry *first = nullptr;
  std::vector<StepIO::Entry *> outputs;
  for (StepIO::Entry &e : io.entries)
    if (e.want != Want::None) {
      outputs.push_back(&e);
      first = first ? first : &e;
    }
  ChoiceRequest request;
  if (kind == Want::Greedy) {
    request = ChoiceRequest::greedy();
  } else if (kind == Want::Tokens) {
    std::vector<BeamRow> rows;
    std::vector<double> draws;
    for (const StepIO::Entry *e : outputs) {
      rows.push_back(io.rules[size_t(e->firstRule)]);
      draws.push_back(e->draw);
    }
    request = ChoiceRequest::tokens(std::move(rows), std::move(draws), first->rule);
  } else {
    std::vector<BeamRow> rules;
    for (const StepIO::Entry *e : outputs)
      rules.insert(rules.end(), io.rules.begin() + e->firstRule, io.rules.begin() + e->firstRule + e->rules);
    request = ChoiceRequest::beams(std::move(rules), first->k);
  }
  ChoiceAnswer answer;
  if (Status s = dec.forward(io.chunks, request, answer); !s)
    return s;
  for (size_t r = 0; r < outputs.size(); ++r) {
    StepIO::Entry &e = *outputs[r];
    if (kind == Want::Beams) {
      e.firstCand = int64_t(r) * e.rules * e.k;
    } else {
      e.token = answer.tokens[r];
      e.logprob = answer.logprobs[r];
    }
  }
  io.candTokens = std::move(answer.candidates);
  io.candScores = std::move(answer.scores);
  return Status::ok();
}

Status encodeSources(Decoder &dec, const std::vector<std::vector<int64_t>> &sources,
                     const std::vector<std::vector<int32_t>> &slots) {
  return dec.encodeSources(sources, slots);
}

bool decoderChoosesTokens(const Decoder &dec, const SampleRule &rule) {
  return dec.chooses(ChoiceRequest::tokens({}, {}, rule));
}

void resetSlots(Decoder &dec, const std::vector<int32_t> &slots) {
  for (int32_t s : slots)
    dec.resetSlot(s);
}

} // namespace search
} // namespace genrt
