#include "runtime/search/PromptScores.h"

#include "runtime/choice/Beams.h"

#include <algorithm>
#include <cmath>

namespace genrt {
namespace search {

TokenScore scoreRow(const float *logits, int64_t vocab, int64_t token, int64_t k) {
  const float mx = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(double(logits[v]) - double(mx));
  const double lse = double(mx) + std::log(sum);
  TokenScore s;
  s.token = token;
  s.logprob = float(double(logits[token]) - lse);
  const float mine = logits[token];
  s.rank = 1 + std::count_if(logits, logits + vocab, [mine](float x) { return x > mine; });
  k = std::min(k, vocab);
  if (k > 0) {
    std::vector<int32_t> tokens(size_t(k), 0);
    std::vector<float> scores(size_t(k), 0.f);
    topCandidates(logits, vocab, k, tokens.data(), scores.data());
    for (int64_t i = 0; i < k; ++i)
      s.top.emplace_back(tokens[size_t(i)], float(double(scores[size_t(i)]) - lse));
  }
  return s;
}

Status scorePrompt(Decoder &dec, int32_t slot, const std::vector<int64_t> &ids, int64_t k,
                   std::vector<TokenScore> &out, int64_t piece) {
  if (dec.info().encoderDecoder)
    return Status::error("prompt log-probabilities are for decoder-only models");
  const int64_t V = dec.info().vocabSize, n = int64_t(ids.size());
  dec.resetSlot(slot);
  ChoiceAnswer answer;
  Status s = Status::ok();
  for (int64_t t0 = 0; s && t0 + 1 < n; t0 += piece) {
    const int64_t t1 = std::min(t0 + piece, n);
    Chunk c{slot, std::vector<int64_t>(ids.begin() + t0, ids.begin() + t1)};
    c.everyToken = true;
    if (!(s = dec.forward({c}, ChoiceRequest::logits(), answer)))
      break;
    for (int64_t t = t0; t < t1 && t + 1 < n; ++t)
      out.push_back(scoreRow(answer.logits.data() + (t - t0) * V, V, ids[size_t(t + 1)], k));
  }
  dec.resetSlot(slot);
  return s;
}

} // namespace search
} // namespace genrt
