#include "runtime/Choice.h"

#include <algorithm>

namespace genrt {

ChoiceRequest ChoiceRequest::greedy() {
  ChoiceRequest r;
  r.kind = ChoiceKind::Greedy;
  return r;
}

ChoiceRequest ChoiceRequest::beams(std::vector<BeamRow> rules, int64_t k) {
  ChoiceRequest r;
  r.kind = ChoiceKind::Beams;
  r.rules = std::move(rules);
  r.k = k;
  return r;
}

ChoiceRequest ChoiceRequest::tokens(std::vector<BeamRow> rows, std::vector<double> draws, const SampleRule &rule) {
  ChoiceRequest r;
  r.kind = ChoiceKind::Tokens;
  r.rules = std::move(rows);
  r.draws = std::move(draws);
  r.rule = rule;
  return r;
}

int64_t ChoiceRequest::rulesPerRow(int64_t rows) const {
  if (kind != ChoiceKind::Beams)
    return 1;
  const int64_t n = static_cast<int64_t>(rules.size());
  return rows > 0 && n % rows == 0 ? n / rows : 0;
}

std::string ChoiceRequest::check(int64_t rows, int64_t vocab) const {
  switch (kind) {
  case ChoiceKind::Logits:
  case ChoiceKind::Greedy:
    return {};
  case ChoiceKind::Beams:
    if (rows > 0 && rulesPerRow(rows) < 1)
      return "beam candidates: " + std::to_string(rules.size()) + " rules for " + std::to_string(rows) +
             " rows; give the same number of rules a row";
    if (k < 1 || k > vocab)
      return "beam candidates: k = " + std::to_string(k) + " outside [1, " + std::to_string(vocab) + "]";
    return {};
  case ChoiceKind::Tokens:
    if (static_cast<int64_t>(rules.size()) != rows || static_cast<int64_t>(draws.size()) != rows)
      return "token choice: " + std::to_string(rules.size()) + " rules and " + std::to_string(draws.size()) +
             " draws for " + std::to_string(rows) + " rows; give one of each a row";
    return {};
  }
  return "an unknown choice kind";
}

ChoiceRequest ChoiceRequest::select(const std::vector<int64_t> &rows, int64_t total) const {
  ChoiceRequest r;
  r.kind = kind;
  r.k = k;
  r.rule = rule;
  const size_t per = static_cast<size_t>(std::max<int64_t>(1, rulesPerRow(total)));
  for (int64_t row : rows) {
    if (kind == ChoiceKind::Beams || kind == ChoiceKind::Tokens)
      r.rules.insert(r.rules.end(), rules.begin() + row * per, rules.begin() + (row + 1) * per);
    if (kind == ChoiceKind::Tokens)
      r.draws.push_back(draws[static_cast<size_t>(row)]);
  }
  return r;
}

void ChoiceAnswer::reset(const ChoiceRequest &request, int64_t rows, int64_t vocab) {
  logits.clear();
  tokens.clear();
  logprobs.clear();
  candidates.clear();
  scores.clear();
  switch (request.kind) {
  case ChoiceKind::Logits:
    logits.assign(static_cast<size_t>(rows * vocab), 0.f);
    break;
  case ChoiceKind::Greedy:
  case ChoiceKind::Tokens:
    tokens.assign(static_cast<size_t>(rows), 0);
    logprobs.assign(static_cast<size_t>(rows), 0.f);
    break;
  case ChoiceKind::Beams:
    candidates.assign(request.rules.size() * static_cast<size_t>(request.k), 0);
    scores.assign(request.rules.size() * static_cast<size_t>(request.k), 0.f);
    break;
  }
}

void ChoiceAnswer::place(const ChoiceRequest &request, int64_t total, const ChoiceAnswer &part,
                         const std::vector<int64_t> &rows, int64_t vocab) {
  const int64_t per = std::max<int64_t>(1, request.rulesPerRow(total)) * request.k;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t r = static_cast<size_t>(rows[i]);
    switch (request.kind) {
    case ChoiceKind::Logits:
      std::copy_n(part.logits.begin() + i * vocab, vocab, logits.begin() + r * vocab);
      break;
    case ChoiceKind::Greedy:
    case ChoiceKind::Tokens:
      tokens[r] = part.tokens[i];
      logprobs[r] = part.logprobs[i];
      break;
    case ChoiceKind::Beams:
      std::copy_n(part.candidates.begin() + i * per, per, candidates.begin() + r * per);
      std::copy_n(part.scores.begin() + i * per, per, scores.begin() + r * per);
      break;
    }
  }
}

} // namespace genrt
