#include "runtime/GreedyChoice.h"

#include "runtime/Decoder.h"
#include "runtime/SoftmaxSum.h"

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

Status Decoder::forwardGreedy(const std::vector<Chunk> &chunks, int64_t *tokens, float *logprobs) {
  const int64_t V = info().vocabSize;
  std::vector<float> logits(chunks.size() * static_cast<size_t>(V));
  if (Status s = forward(chunks, logits.data()); !s)
    return s;
  for (size_t k = 0; k < chunks.size(); ++k)
    greedyChoice(logits.data() + k * V, V, tokens[k], logprobs[k]);
  return Status::ok();
}

} // namespace genrt
