#include "runtime/search/Sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace genrt {
namespace search {

std::mt19937_64 seededRng(uint64_t seed, uint64_t promptIndex, uint64_t row) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(promptIndex),
                    uint32_t(promptIndex >> 32), uint32_t(row), uint32_t(row >> 32)};
  return std::mt19937_64(seq);
}

int64_t sampleToken(const float *scores, int64_t vocab, std::mt19937_64 &rng) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t v = 0; v < vocab; ++v)
    mx = std::max(mx, scores[v]);
  if (!(mx > -std::numeric_limits<float>::infinity()))
    return 0; // nothing drawable; processors never ban every token in practice
  std::vector<double> weights(vocab);
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    weights[v] = std::exp(double(scores[v]) - double(mx));
    sum += weights[v];
  }
  // 53 random bits -> [0, 1); std::uniform_real_distribution's output is
  // not pinned down by the standard, this is.
  double u = double(rng() >> 11) * (1.0 / 9007199254740992.0);
  double target = u * sum;
  double cum = 0;
  int64_t lastPositive = -1;
  for (int64_t v = 0; v < vocab; ++v) {
    if (weights[v] <= 0)
      continue;
    lastPositive = v;
    cum += weights[v];
    if (cum > target)
      return v;
  }
  return lastPositive; // rounding left target at the very end
}

} // namespace search
} // namespace genrt
