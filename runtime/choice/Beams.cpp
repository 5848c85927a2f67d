#include "runtime/choice/Beams.h"

#include "runtime/choice/SoftmaxSum.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace genrt {

void topCandidates(const float *acc, int64_t vocab, int64_t k, int32_t *tokens, float *scores) {
  std::vector<int32_t> idx(static_cast<size_t>(vocab));
  std::iota(idx.begin(), idx.end(), 0);
  auto before = [&](int32_t a, int32_t b) { return acc[a] > acc[b] || (acc[a] == acc[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
  for (int64_t n = 0; n < k; ++n) {
    tokens[n] = idx[n];
    scores[n] = acc[idx[n]];
  }
}

void logSoftmax(float *row, int64_t vocab) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float mx = kNegInf;
  for (int64_t v = 0; v < vocab; ++v)
    mx = std::max(mx, row[v]);
  if (mx == kNegInf)
    return; // every token banned: leave -inf rather than NaN
  const float lse = float(std::log(sumExpShifted(row, vocab, mx)));
  for (int64_t v = 0; v < vocab; ++v)
    row[v] = (row[v] - mx) - lse;
}

void applyRowEdits(float *row, int64_t vocab, const BeamRow &r) {
  auto penalise = [&](const std::vector<int32_t> &ids, float p) {
    if (p != 1.f)
      for (int32_t t : ids) {
        const float s = row[t];
        row[t] = s < 0 ? s * p : s / p;
      }
  };
  for (const auto &[t, b] : r.biased)
    row[t] = row[t] + b;
  penalise(r.encoderPenalized, r.encoderPenalty);
  penalise(r.penalized, r.penalty);
  if (r.force) {
    std::fill(row, row + vocab, -std::numeric_limits<float>::infinity());
    for (int32_t t : r.forced)
      row[t] = 0.f;
  }
  for (int32_t t : r.decayed) {
    const float s = row[t];
    row[t] = s + (std::isfinite(s) ? std::fabs(s) * r.decayScale : 0.f);
  }
  for (int32_t t : r.banned)
    row[t] = -std::numeric_limits<float>::infinity();
}

void beamCandidates(float *row, int64_t vocab, const BeamRow &r, int64_t k, int32_t *tokens, float *scores) {
  logSoftmax(row, vocab);
  applyRowEdits(row, vocab, r);
  if (r.renormalize)
    logSoftmax(row, vocab);
  for (int64_t v = 0; v < vocab; ++v)
    row[v] = row[v] + r.score;
  topCandidates(row, vocab, k, tokens, scores);
}

} // namespace genrt
