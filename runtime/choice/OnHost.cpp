#include "runtime/choice/OnHost.h"

#include "runtime/choice/Beams.h"
#include "runtime/choice/Greedy.h"
#include "runtime/choice/Sampling.h"

#include <algorithm>
#include <vector>

namespace genrt {

Status answerOnHost(const ChoiceRequest &request, const float *logits, int64_t rows, int64_t vocab,
                    ChoiceAnswer &answer) {
  if (std::string why = request.check(rows, vocab); !why.empty())
    return Status::error(why);
  answer.reset(request, rows, vocab);
  const size_t V = static_cast<size_t>(vocab);
  std::vector<float> row;
  switch (request.kind) {
  case ChoiceKind::Logits:
    std::copy_n(logits, rows * vocab, answer.logits.begin());
    break;
  case ChoiceKind::Greedy:
    for (int64_t r = 0; r < rows; ++r)
      greedyChoice(logits + r * V, vocab, answer.tokens[r], answer.logprobs[r]);
    break;
  case ChoiceKind::Beams: {
    const int64_t per = request.rulesPerRow(rows), k = request.k;
    row.resize(V);
    for (size_t r = 0; r < request.rules.size(); ++r) {
      std::copy_n(logits + (static_cast<int64_t>(r) / per) * vocab, vocab, row.data());
      beamCandidates(row.data(), vocab, request.rules[r], k, answer.candidates.data() + r * k,
                     answer.scores.data() + r * k);
    }
    break;
  }
  case ChoiceKind::Tokens:
    row.resize(V);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(logits + r * vocab, vocab, row.data());
      chooseToken(row.data(), vocab, request.rules[r], request.rule, request.draws[r], answer.tokens[r],
                  answer.logprobs[r]);
    }
    break;
  }
  return Status::ok();
}

} // namespace genrt
