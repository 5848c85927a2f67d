// Beam search's candidates from one row of logits, on the host: the rule the
// device kernel (runtime/cuda/TokenAbi.h, genc_beam_topk) reproduces, so a
// decode step of a beam search returns k (token, score) pairs a row instead
// of its logits.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace genrt {

/// What a row's candidates are ranked by: HF's log_softmax(logits), then the
/// logits processors that only touch listed tokens, in HF's order — the
/// sequence bias (s + b on `biased`: each id once, its biases summed as HF's
/// bias row sums them), the encoder repetition penalty and then the repetition penalty (s < 0 ?
/// s * p : s / p) on `encoderPenalized` / `penalized` (distinct ids, in the
/// vocabulary); with `force` (a forced BOS / EOS step) every id -inf but the
/// `forced` ones, 0; the exponential decay length penalty on `decayed`
/// (finite s: s + |s| * decayScale); then -inf on `banned` (bans commute
/// with the decay: it keeps -inf and finite apart); with `renormalize`
/// (renormalize_logits, HF's last processor) the edited row's own
/// log-softmax — then + `score`, the running beam's score (all float32, as
/// in torch).
struct BeamRow {
  float score = 0.f;
  float encoderPenalty = 1.f, penalty = 1.f, decayScale = 0.f;
  bool force = false, renormalize = false;
  std::vector<std::pair<int32_t, float>> biased;
  std::vector<int32_t> encoderPenalized, penalized, forced, decayed, banned;
};

/// row := the BeamRow edits (bias, penalties, forced step, decay, bans), in its
/// order; on raw logits for greedy / sampling (runtime/SampleChoice.h), on
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
