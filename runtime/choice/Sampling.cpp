#include "runtime/choice/Sampling.h"

#include "runtime/choice/Beams.h"
#include "runtime/choice/Greedy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace genrt {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The row's max (-inf for none) and S = sum exp(double(x - max)) in index order.
void rowSum(const float *row, int64_t vocab, float &mx, double &sum) {
  mx = kNegInf;
  for (int64_t v = 0; v < vocab; ++v)
    mx = std::max(mx, row[v]);
  sum = 0;
  if (mx == kNegInf)
    return;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(double(row[v] - mx));
}
} // namespace

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += W0;
      k[1] += W1;
    }
    const uint64_t p0 = uint64_t(M0) * c[0], p1 = uint64_t(M1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
  }
  return c;
}

double sampleUniform(uint64_t seed, uint64_t prompt, uint64_t row, uint64_t step) {
  const std::array<uint32_t, 4> x =
      philox4x32({uint32_t(step), uint32_t(row), uint32_t(prompt), uint32_t(prompt >> 32)},
                 {uint32_t(seed), uint32_t(seed >> 32)});
  const uint64_t bits = (uint64_t(x[1]) << 32 | x[0]) >> 11;
  return double(bits) * (1.0 / 9007199254740992.0);
}

uint32_t orderedKey(float f) {
  if (f == 0.f)
    f = 0.f; // -0.0 -> +0.0
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

int64_t drawToken(const float *scores, int64_t vocab, double u) {
  float mx;
  double total;
  rowSum(scores, vocab, mx, total);
  if (mx == kNegInf)
    return 0; // nothing drawable; processors never ban every token in practice
  const double target = u * total;
  double cum = 0;
  int64_t lastPositive = -1;
  for (int64_t v = 0; v < vocab; ++v) {
    const double w = std::exp(double(scores[v] - mx));
    if (w <= 0)
      continue;
    lastPositive = v;
    cum += w;
    if (cum > target)
      return v;
  }
  return lastPositive; // rounding left the target at the very end
}

void drawTokensWithoutReplacement(float *scores, int64_t n, const std::vector<double> &us,
                                  std::vector<int64_t> &out) {
  out.clear();
  std::vector<double> w(static_cast<size_t>(n));
  float weighedAt = kNegInf; // the maximum w was computed against (none yet)
  float mx = kNegInf;
  bool stale = true; // the maximum moves only when a draw takes it
  for (double u : us) {
    if (stale) {
      mx = kNegInf;
      for (int64_t v = 0; v < n; ++v)
        mx = std::max(mx, scores[v]);
      stale = false;
    }
    if (mx == kNegInf) {
      out.push_back(-1);
      return;
    }
    // drawToken's weights, its total and its scan, over the same doubles in
    // the same order (a drawn entry weighs exp(-inf) = 0 there, 0 here).
    if (mx != weighedAt) {
      for (int64_t v = 0; v < n; ++v)
        w[size_t(v)] = std::exp(double(scores[v] - mx));
      weighedAt = mx;
    }
    double total = 0;
    for (int64_t v = 0; v < n; ++v)
      total += w[size_t(v)];
    const double target = u * total;
    double cum = 0;
    int64_t chosen = -1;
    for (int64_t v = 0; v < n; ++v) {
      if (w[size_t(v)] <= 0)
        continue;
      chosen = v;
      cum += w[size_t(v)];
      if (cum > target)
        break;
    }
    out.push_back(chosen);
    if (chosen < 0) // no positive weight (cannot be while mx is finite)
      return;
    stale = scores[chosen] == mx;
    scores[chosen] = kNegInf;
    w[size_t(chosen)] = 0;
  }
}

void applyTopKRule(float *row, int64_t vocab, int64_t topK) {
  if (topK <= 0 || topK >= vocab)
    return;
  std::vector<float> sorted(row, row + vocab);
  std::nth_element(sorted.begin(), sorted.begin() + (topK - 1), sorted.end(), std::greater<float>());
  const float kth = sorted[size_t(topK - 1)];
  for (int64_t v = 0; v < vocab; ++v)
    if (row[v] < kth)
      row[v] = kNegInf;
}

void applyTopPRule(float *row, int64_t vocab, double topP) {
  if (!(topP < 1.0))
    return;
  float mx;
  double sum;
  rowSum(row, vocab, mx, sum);
  if (mx == kNegInf)
    return;
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] < row[b]; });
  std::vector<uint64_t> q(static_cast<size_t>(vocab));
  for (int64_t v = 0; v < vocab; ++v)
    q[size_t(v)] = quantizedMass(float(std::exp(double(row[v] - mx)) / sum));
  const float threshold = float(1.0 - topP);
  uint64_t cum = 0;
  std::vector<int64_t> removed;
  for (int64_t i = 0; i + 1 < vocab; ++i) { // the last (largest) always stays
    cum += q[size_t(order[size_t(i)])];
    if (float(double(cum) * 0x1p-62) <= threshold)
      removed.push_back(order[size_t(i)]);
    else
      break; // cum only grows
  }
  for (int64_t id : removed)
    row[id] = kNegInf;
}

void applyMinPRule(float *row, int64_t vocab, float minP) {
  if (!(minP > 0.f))
    return;
  float mx;
  double sum;
  rowSum(row, vocab, mx, sum);
  if (mx == kNegInf)
    return;
  const float scaled = minP * float(1.0 / sum);
  for (int64_t v = 0; v < vocab; ++v)
    if (float(std::exp(double(row[v] - mx)) / sum) < scaled)
      row[v] = kNegInf;
}

void chooseToken(float *row, int64_t vocab, const BeamRow &edits, const SampleRule &rule, double u, int64_t &token,
                 float &logprob) {
  applyRowEdits(row, vocab, edits);
  if (!rule.sample) {
    greedyChoice(row, vocab, token, logprob);
    return;
  }
  if (rule.temperature != 1.f)
    for (int64_t v = 0; v < vocab; ++v)
      row[v] = row[v] / rule.temperature;
  applyTopKRule(row, vocab, rule.topK);
  applyTopPRule(row, vocab, rule.topP);
  applyMinPRule(row, vocab, rule.minP);
  token = drawToken(row, vocab, u);
  float mx;
  double sum;
  rowSum(row, vocab, mx, sum);
  logprob = mx == kNegInf ? kNegInf : (row[token] - mx) - float(std::log(sum));
}

} // namespace genrt
