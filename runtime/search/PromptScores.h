// A prompt's log-probabilities: each of its tokens after the first as the
// tokens before it predict it — the model's log-softmax (before any logits
// processor, as the generated tokens' log-probabilities are reported), its
// rank at the position and the likeliest k there. The server's echo /
// prompt_logprobs, genppl's perplexity and Generator.score in the Python
// package all read them from the prefill's own rows (Chunk::everyToken).
#pragma once
#include "runtime/Decoder.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace genrt {
namespace search {

struct TokenScore {
  int64_t token = 0;
  float logprob = 0.f;
  int64_t rank = 0; // 1: the likeliest token at its position
  std::vector<std::pair<int64_t, float>> top; // the likeliest k, best first (ties: lower id first)
};

/// `token`'s score in one row of `vocab` logits, in double precision (the
/// log of the sum of exponentials over the row), with the row's best k.
TokenScore scoreRow(const float *logits, int64_t vocab, int64_t token, int64_t k);

/// Runs `ids` into `slot` (emptied before and after) as everyToken chunks
/// of at most `piece` tokens and appends the scores of ids[1..] to `out`.
/// Fails as the decoder's forward does (a token out of range, a prompt past
/// the plan's length) or for an encoder-decoder model.
Status scorePrompt(Decoder &decoder, int32_t slot, const std::vector<int64_t> &ids, int64_t k,
                   std::vector<TokenScore> &out, int64_t piece = 256);

} // namespace search
} // namespace genrt
