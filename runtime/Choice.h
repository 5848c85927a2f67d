// The one channel between the search loop and an executor for what a
// forward run brings back: a request (the logits, greedy's token, beam
// candidates, or a token by the sampling rule) and its answer. The search
// says what it wants; the executor says which requests it answers where the
// logits are (Executor::chooses); for the rest the Session brings the
// logits to the host and answers there (runtime/choice/OnHost.h), by the
// same rules (runtime/choice/: Greedy.h, Beams.h, Sampling.h).
//
// Rows: a run's output rows are the chunks that ask for output
// (Chunk::output), in chunk order. Beams ranks `rules.size() / rows` rules a
// row (a prompt's first step: every beam starts from its logits).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace genrt {

/// What a row's beam candidates are ranked by (Beams), or the edits a row's
/// raw logits take before the sampling rule (Tokens): HF's log_softmax(logits)
/// (Beams only), then the logits processors that only touch listed tokens, in
/// HF's order — the sequence bias (s + b on `biased`: each id once, its biases
/// summed as HF's bias row sums them), the encoder repetition penalty and then
/// the repetition penalty (s < 0 ? s * p : s / p) on `encoderPenalized` /
/// `penalized` (distinct ids, in the vocabulary); with `force` (a forced BOS /
/// EOS step) every id -inf but the `forced` ones, 0; the exponential decay
/// length penalty on `decayed` (finite s: s + |s| * decayScale); then -inf on
/// `banned` (bans commute with the decay: it keeps -inf and finite apart);
/// with `renormalize` (renormalize_logits, HF's last processor) the edited
/// row's own log-softmax — then + `score`, the running beam's score (all
/// float32, as in torch). runtime/choice/Beams.h applies it.
struct BeamRow {
  float score = 0.f;
  float encoderPenalty = 1.f, penalty = 1.f, decayScale = 0.f;
  bool force = false, renormalize = false;
  std::vector<std::pair<int32_t, float>> biased;
  std::vector<int32_t> encoderPenalized, penalized, forced, decayed, banned;
};

/// The warpers of a Tokens request: the same for every row.
/// runtime/choice/Sampling.h states the rule exactly.
struct SampleRule {
  bool sample = false;     // false: greedy (argmax; no warpers)
  float temperature = 1.f; // applied when != 1
  int64_t topK = 0;        // 0: off (and k >= vocab does nothing)
  double topP = 1.0;       // < 1: on
  float minP = 0.f;        // > 0: on
};

enum class ChoiceKind : uint8_t {
  Logits, // each row's logits, [rows, vocab]
  Greedy, // each row's first largest logit and its log-softmax (no processors)
  Beams,  // each rule's best k (token, score) (runtime/choice/Beams.h)
  Tokens, // each row's token by its edits, the rule and its draw (runtime/choice/Sampling.h)
};

struct ChoiceRequest {
  ChoiceKind kind = ChoiceKind::Logits;
  /// Beams: the rules, the same number a row; Tokens: one a row.
  std::vector<BeamRow> rules;
  int64_t k = 0;             // Beams: candidates a rule
  std::vector<double> draws; // Tokens: u in [0, 1) a row (unused when greedy)
  SampleRule rule;           // Tokens

  static ChoiceRequest logits() { return {}; }
  static ChoiceRequest greedy();
  static ChoiceRequest beams(std::vector<BeamRow> rules, int64_t k);
  static ChoiceRequest tokens(std::vector<BeamRow> rows, std::vector<double> draws, const SampleRule &rule);

  /// Rules a row for `rows` output rows (Beams), else 1; 0 when they do not
  /// divide evenly.
  int64_t rulesPerRow(int64_t rows) const;
  /// Whether the request fits `rows` output rows of a `vocab` vocabulary; the
  /// reason when it does not.
  std::string check(int64_t rows, int64_t vocab) const;
  /// The request for some of its `total` output rows: `rows`, indices in
  /// increasing order.
  ChoiceRequest select(const std::vector<int64_t> &rows, int64_t total) const;
};

/// The answer to a request, by kind; the other members are left empty.
struct ChoiceAnswer {
  std::vector<float> logits;       // Logits: [rows, vocab]
  std::vector<int64_t> tokens;     // Greedy, Tokens: a row
  std::vector<float> logprobs;     // Greedy, Tokens: the token's log-softmax of the final row
  std::vector<int32_t> candidates; // Beams: [rules, k]
  std::vector<float> scores;       // Beams: [rules, k]

  /// Sized (and zeroed) for `request` over `rows` rows.
  void reset(const ChoiceRequest &request, int64_t rows, int64_t vocab);
  /// Copies `part`, the answer to request.select(rows, total), into this
  /// answer to `request` over `total` rows.
  void place(const ChoiceRequest &request, int64_t total, const ChoiceAnswer &part, const std::vector<int64_t> &rows,
             int64_t vocab);
};

} // namespace genrt
