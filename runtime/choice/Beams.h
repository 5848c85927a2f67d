// Beam search's candidates from one row of logits, on the host: the rule the
// device kernel (runtime/cuda/TokenAbi.h, genc_beam_topk) reproduces, so a
// decode step of a beam search returns k (token, score) pairs a row instead
// of its logits.
#pragma once
#include "runtime/Choice.h"

#include <cstdint>
#include <vector>

namespace genrt {


/// row := the BeamRow edits (bias, penalties, forced step, decay, bans), in its
/// order; on raw logits for greedy / sampling (runtime/choice/Sampling.h), on
/// the log-softmax for beams (beamCandidates). Neither `renormalize` nor
/// `score` is applied.
void applyRowEdits(float *row, int64_t vocab, const BeamRow &edits);

/// row := log_softmax(row): (x - max) - log(sum exp(x - max)), the sum in f64
/// (a row of -inf stays so). The searches' and the beam kernel's rule.
void logSoftmax(float *row, int64_t vocab);

/// The best k of acc[0 .. vocab) by (value desc, index asc): torch.topk's
/// order as the search breaks its ties. k <= vocab.
void topCandidates(const float *acc, int64_t vocab, int64_t k, int32_t *tokens, float *scores);

/// row := the scores BeamRow describes (from logits), then its best k.
void beamCandidates(float *row, int64_t vocab, const BeamRow &r, int64_t k, int32_t *tokens, float *scores);

} // namespace genrt
