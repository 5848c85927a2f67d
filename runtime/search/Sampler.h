// Drawing tokens. torch's RNG cannot be reproduced here, so sampling matches
// HF in distribution only; draws are reproducible for a given seed, and the
// same on every device: a row's draw at a step is a counter-based random
// number (Philox4x32-10 of (seed, prompt index, row, step):
// runtime/choice/Sampling.h), the GPU's kernels take the same u, and the draw
// rule (drawToken) is one rule on both.
#pragma once
#include "runtime/choice/Sampling.h"

#include <cstdint>

namespace genrt {
namespace search {

/// The draw u in [0, 1) of one output row at one step, derived from (seed,
/// prompt index, row, step), so a prompt's samples do not depend on how
/// prompts were batched, nor on the device.
inline double drawOf(uint64_t seed, uint64_t promptIndex, uint64_t row, uint64_t step) {
  return sampleUniform(seed, promptIndex, row, step);
}

/// Draws a token from softmax(scores) by u; -inf scores are never drawn.
inline int64_t sampleToken(const float *scores, int64_t vocab, double u) { return drawToken(scores, vocab, u); }

} // namespace search
} // namespace genrt
