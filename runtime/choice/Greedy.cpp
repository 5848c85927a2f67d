#include "runtime/choice/Greedy.h"

#include "runtime/choice/SoftmaxSum.h"

#include <cmath>
#include <limits>
#include <vector>

namespace genrt {

void greedyChoice(const float *row, int64_t vocab, int64_t &token, float &logprob) {
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; ++v)
    if (row[v] > row[best])
      best = v;
  token = best;
  const float mx = row[best];
  if (mx == -std::numeric_limits<float>::infinity()) {
    logprob = mx;
    return;
  }
  logprob = -float(std::log(sumExpShifted(row, vocab, mx)));
}

} // namespace genrt
