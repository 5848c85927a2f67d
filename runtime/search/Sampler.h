// Drawing tokens. torch's RNG cannot be reproduced here, so sampling matches
// HF in distribution only; draws are reproducible for a given seed.
#pragma once
#include <cstdint>
#include <random>

namespace genrt {
namespace search {

/// An RNG for one output row, derived from (seed, prompt index, row), so a
/// prompt's samples do not depend on how prompts were batched.
std::mt19937_64 seededRng(uint64_t seed, uint64_t promptIndex, uint64_t row);

/// Draws a token from softmax(scores); -inf scores are never drawn.
int64_t sampleToken(const float *scores, int64_t vocab, std::mt19937_64 &rng);

} // namespace search
} // namespace genrt
