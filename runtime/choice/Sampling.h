// Greedy search's and sampling's choice of one row's token where the logits
// processors only touch listed tokens: the rule the device kernel
// (runtime/cuda/TokenAbi.h, genc_token_pass) reproduces, written once here
// as the host reference. HF's _sample order: the processors on the raw
// logits (a BeamRow's edits), then for sampling the warpers (temperature,
// top-k, top-p, min-p), then argmax or a multinomial draw.
//
// Thresholds, exactly (identical on host and device; `w` below is
// exp(double(x - max)) of the row as each warper sees it, f64):
//  - top-k (0 < k < vocab): keep x >= the k-th largest value, counting
//    repeats (HF's rule: ties at the threshold are kept). -0.0 == +0.0.
//  - top-p (p < 1): HF's rule, sort ascending by (value, index) — equal
//    values, the lower index first, as a stable sort — and remove a token
//    when the cumulative probability up to it is <= float(1 - p), except the
//    last (the largest value, highest index). The probabilities are HF's
//    float p = float(w / S) (S: the row's f64 sum), and the cumulative sum is
//    of p quantized to Q = floor(p * 2^62) (exact u64 arithmetic: any order
//    gives the same sums, so the device's atomics and trees agree with the
//    host bit for bit), compared as float(double(cum) * 2^-62) <= float(1-p).
//    HF sums the float p in double instead: the kept sets differ only when a
//    cumulative sum lies within ~1e-16 of the threshold.
//  - min-p (p > 0): keep float(w / S) >= float(p) * float(1 / S) (HF's
//    probs[i] >= min_p * max(probs); min_p <= 1 keeps the maximum).
// The draw: weights w of the kept tokens, W their f64 sum, target = u * W;
// the token is the smallest index whose cumulative weight (index order)
// exceeds the target (the last positive weight if rounding left none).
// The device sums W over parts of the row (genc_token_pass's parts, each a
// fixed tree, the parts in order), the host in index order: the sums differ
// in their last bits, so a draw can differ only where u * W falls within
// ~1e-16 of a boundary. logprob: the token's log-softmax of the final row,
// (x - max) - float(log(W)) — what the host search adds to a row's score.
#pragma once
#include "runtime/Choice.h"

#include <array>
#include <vector>
#include <cstdint>

namespace genrt {


/// Philox4x32-10 (Salmon et al., SC'11; Random123's philox4x32 with 10
/// rounds): the block of 4 words for counter `ctr` under `key`.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

/// The draw u in [0, 1) of (seed, prompt index, row, step): Philox4x32-10
/// with key (seed low, seed high) and counter (step, row, prompt low,
/// prompt high); u = the top 53 bits of (word1 << 32 | word0) * 2^-53.
double sampleUniform(uint64_t seed, uint64_t prompt, uint64_t row, uint64_t step);

/// The draw rule above from a final row of scores (-inf: never drawn).
/// Returns 0 when every score is -inf.
int64_t drawToken(const float *scores, int64_t vocab, double u);

/// Draws without replacement: for each u in `us`, in order, drawToken over
/// `scores` with the entries drawn so far set to -inf (which this does to
/// `scores`), into `out`. The same tokens as those calls, bit for bit, but
/// each score's weight exp(score - max) is computed once per change of the
/// remaining maximum instead of twice a draw (beam sampling draws 2 x beams
/// tokens from beams x vocabulary scores a step). A draw that finds nothing
/// left to draw (every score -inf) gives -1 and stops there.
void drawTokensWithoutReplacement(float *scores, int64_t n, const std::vector<double> &us,
                                  std::vector<int64_t> &out);

/// The row's token and its logprob by the rule above: `edits` applied to
/// the raw logits in `row` (its score is unused), then, sampling, the
/// warpers and the draw by `u`. `row` is left as the final scores.
void chooseToken(float *row, int64_t vocab, const BeamRow &edits, const SampleRule &rule, double u, int64_t &token,
                 float &logprob);

/// The warpers alone, by the thresholds above (sorting-free on the device;
/// here the plain definition).
void applyTopKRule(float *row, int64_t vocab, int64_t topK);
void applyTopPRule(float *row, int64_t vocab, double topP);
void applyMinPRule(float *row, int64_t vocab, float minP);

/// The monotone u32 key of a float the device selects over: larger values,
/// larger keys; -0.0 and +0.0 one key (NaN: not ordered, never in a row).
uint32_t orderedKey(float f);
/// Q = floor(p * 2^62), exact.
inline uint64_t quantizedMass(float p) { return static_cast<uint64_t>(static_cast<double>(p) * 4611686018427387904.0); }

} // namespace genrt
