// Hugging Face logits processors and sampling warpers, on one row of scores.
//
// Each function edits `row[0 .. vocab)` in place, in float32 like HF does.
// `history` is everything HF's `input_ids` holds for that row: the prompt
// (including any positions the attention mask hides: HF's padded input_ids
// carry the pad tokens too) followed by the tokens generated so far.
//
// In beam search HF applies the processors to log-softmax scores; in greedy
// search and sampling to the raw logits. The warpers only run when sampling.
#pragma once
#include "runtime/choice/Beams.h"
#include "runtime/choice/Sampling.h"
#include "runtime/search/GenerationConfig.h"

#include <cstdint>
#include <vector>

namespace genrt {
namespace search {

using genrt::logSoftmax; // runtime/choice/Beams.h: the one rule, the sum in f64

/// RepetitionPenaltyLogitsProcessor: each distinct token of the history gets
/// score < 0 ? score * penalty : score / penalty (once, however often it occurs).
void applyRepetitionPenalty(float *row, int64_t vocab, const std::vector<int64_t> &history,
                            float penalty);

/// NoRepeatNGramLogitsProcessor: bans (-inf) every token that would complete
/// an n-gram already present in the history.
void applyNoRepeatNgram(float *row, int64_t vocab, const std::vector<int64_t> &history, int64_t n);

// The encoder's input ids (`encoderIds`) are HF's encoder_input_ids: an
// encoder-decoder's source, a decoder-only model's prompt.

/// EncoderRepetitionPenaltyLogitsProcessor: each distinct token of the
/// encoder's input is made more likely: score < 0 ? score / penalty :
/// score * penalty (HF multiplies and divides by 1 / penalty, in float).
void applyEncoderRepetitionPenalty(float *row, int64_t vocab, const std::vector<int64_t> &encoderIds,
                                   double penalty);
/// EncoderNoRepeatNGramLogitsProcessor: bans every token that would complete,
/// with the history's last n - 1 tokens, an n-gram of the encoder's input.
void applyEncoderNoRepeatNgram(float *row, int64_t vocab, const std::vector<int64_t> &history,
                               const std::vector<int64_t> &encoderIds, int64_t n);

/// MinNewTokensLengthLogitsProcessor: eos ids -> -inf while fewer than
/// `minNewTokens` tokens have been generated.
void applyMinNewTokens(float *row, int64_t vocab, int64_t generated, int64_t minNewTokens,
                       const std::vector<int64_t> &eos);

// The processors below take `curLen` = HF's input_ids.shape[-1]: the row's
// history length (padded prompt, or decoder prompt, plus generated tokens).

/// SuppressTokensLogitsProcessor: `ids` -> -inf at every step.
void applySuppressTokens(float *row, int64_t vocab, const std::vector<int64_t> &ids);
/// SuppressTokensAtBeginLogitsProcessor: `ids` -> -inf when curLen == beginIndex
/// (HF's begin index: the prompt's length, +1 when a forced BOS comes first).
void applyBeginSuppressTokens(float *row, int64_t vocab, const std::vector<int64_t> &ids, int64_t curLen,
                              int64_t beginIndex);
/// ForcedBOSTokenLogitsProcessor: at curLen == 1 every score -inf but bos's, 0.
void applyForcedBos(float *row, int64_t vocab, int64_t bos, int64_t curLen);
/// ForcedEOSTokenLogitsProcessor: at curLen == maxLength - 1 every score -inf
/// but the eos ids', 0.
void applyForcedEos(float *row, int64_t vocab, const std::vector<int64_t> &eos, int64_t curLen, int64_t maxLength);
/// MinLengthLogitsProcessor: eos ids -> -inf while curLen < minLength.
void applyMinLength(float *row, int64_t vocab, const std::vector<int64_t> &eos, int64_t curLen, int64_t minLength);
/// ExponentialDecayLengthPenalty: past regulationStart (its start index +
/// the prompt's length), each finite eos score s gains |s| * (factor^k - 1),
/// k = curLen - regulationStart.
void applyExponentialDecayLengthPenalty(float *row, int64_t vocab, const std::vector<int64_t> &eos, int64_t curLen,
                                        int64_t regulationStart, double factor);

/// SequenceBiasLogitsProcessor: a one-token sequence's bias always; a longer
/// one's to its last token when the history ends with the rest (and is at
/// least as long as that prefix: transformers 5.23). Biases of one token add up; the whole
/// bias row is added to the scores, as HF does.
void applySequenceBias(float *row, int64_t vocab, const std::vector<int64_t> &history,
                       const std::vector<std::pair<std::vector<int64_t>, float>> &bias);
/// NoBadWordsLogitsProcessor: a sequence bias of -inf for each bad word
/// sequence, except single eos tokens (HF drops those).
void applyBadWords(float *row, int64_t vocab, const std::vector<int64_t> &history,
                   const std::vector<std::vector<int64_t>> &badWords, const std::vector<int64_t> &eos);

/// The processors in HF's order (_get_logits_processor): sequence bias,
/// encoder repetition penalty, repetition penalty, no-repeat n-gram, encoder
/// no-repeat n-gram, bad words, min length, min new tokens, forced BOS, forced EOS,
/// exponential decay length penalty, suppress tokens, begin-suppress tokens;
/// with renormalize_logits a log-softmax last (HF puts it after the warpers;
/// greedy search and sampling choose without it: GreedyAndSampling.cpp).
/// `generated` = tokens generated so far in this row; the history's length
/// is HF's cur_len, and the prompt part of it (history - generated) HF's
/// input_ids_seq_length.
void applyLogitsProcessors(float *row, int64_t vocab, const std::vector<int64_t> &history,
                           const std::vector<int64_t> &encoderIds, int64_t generated,
                           const GenerationConfig &cfg, const std::vector<int64_t> &eos);

/// The BeamRow applyLogitsProcessors is to a row with this history: its
/// edits, and renormalize_logits (the score is the caller's).
void listedTokenRule(const std::vector<int64_t> &history, const std::vector<int64_t> &encoderIds, int64_t generated,
                     const GenerationConfig &cfg, const std::vector<int64_t> &eos, int64_t vocab, BeamRow &row);

/// The warpers of cfg as the device takes them (runtime/choice/Sampling.h).
SampleRule sampleRuleOf(const GenerationConfig &cfg);
/// Whether every warper cfg turns on is one the device runs (temperature,
/// top-k, top-p, min-p; typical-p, epsilon and eta stay on the host).
bool warpersOnDevice(const GenerationConfig &cfg);

void applyTemperature(float *row, int64_t vocab, float temperature);
/// TopKLogitsWarper: removes scores below the k-th largest (ties survive).
void applyTopK(float *row, int64_t vocab, int64_t topK, int64_t minTokensToKeep = 1);
/// TopPLogitsWarper: sort ascending, remove tokens whose cumulative
/// probability is <= 1 - top_p, always keeping the `minTokensToKeep` largest.
void applyTopP(float *row, int64_t vocab, double topP, int64_t minTokensToKeep = 1);
/// MinPLogitsWarper: removes tokens with probability < min_p * max probability.
void applyMinP(float *row, int64_t vocab, float minP, int64_t minTokensToKeep = 1);

/// TypicalLogitsWarper: keeps the tokens whose surprisal is closest to the
/// entropy, up to `mass` of probability.
void applyTypicalP(float *row, int64_t vocab, double mass, int64_t minTokensToKeep = 1);
/// EpsilonLogitsWarper: removes tokens with probability < epsilon.
void applyEpsilonCutoff(float *row, int64_t vocab, double epsilon, int64_t minTokensToKeep = 1);
/// EtaLogitsWarper: removes tokens with probability < min(eta, sqrt(eta)·exp(-entropy)).
void applyEtaCutoff(float *row, int64_t vocab, double eta, int64_t minTokensToKeep = 1);

/// The warpers HF adds for sampling, in its order: temperature (if != 1),
/// top-k (if != 0), top-p (if < 1), min-p (if set), typical-p (if < 1),
/// epsilon (if in (0, 1)), eta (if in (0, 1)).
/// `minTokensToKeep`: HF's for every warper (beam sampling: the eos ids + 1,
/// or 2 without eos ids).
void applyWarpers(float *row, int64_t vocab, const GenerationConfig &cfg, int64_t minTokensToKeep = 1);

/// softmax(row) into probs (float, like torch).
void softmax(const float *row, int64_t vocab, std::vector<float> &probs);

} // namespace search
} // namespace genrt
