// What to generate: the Hugging Face `generate` arguments genrun supports,
// with HF's meaning and (where it has one) HF's default.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace genrt {
namespace text {
class Tokenizer;
}

enum class EarlyStopping { False, True, Never };
/// "true", "false", "never" (genrun's and the Python package's spelling);
/// false for anything else.
bool parseEarlyStopping(const std::string &text, EarlyStopping &out);
const char *earlyStoppingName(EarlyStopping e);

/// A JSON list of token ids (non-negative integers); false if it is not that.
bool parseTokenIds(const json::Value &v, std::vector<int64_t> &out);
/// exponential_decay_length_penalty as HF writes it: [start >= 0, factor].
bool parseExpDecay(const json::Value &v, int64_t &start, double &factor);
/// bad_words_ids as HF writes it: [[ids], ...]; false if it is not that.
bool parseBadWordsIds(const json::Value &v, std::vector<std::vector<int64_t>> &out);
/// sequence_bias as HF's list form: [[[ids], bias], ...].
bool parseSequenceBias(const json::Value &v, std::vector<std::pair<std::vector<int64_t>, float>> &out);
/// stop_strings as HF takes them: a string or a list of strings, none empty.
bool parseStopStrings(const json::Value &v, std::vector<std::string> &out);

struct GenerationConfig {
  // HF's default is max_length=20 counting the prompt; genrun counts new
  // tokens only, so its default is 20 new tokens.
  int64_t maxNewTokens = 20;
  /// Whether maxNewTokens was given (a flag, a keyword or the plan's
  /// default) rather than left at genrun's 20.
  bool maxNewTokensGiven = false;
  /// max_length: HF's prompt + new tokens; 0: unset. Without a given
  /// max_new_tokens, resolveMaxLength makes it max_new_tokens against the
  /// longest prompt (HF pads a batch to it).
  int64_t maxLength = 0;
  int64_t minNewTokens = 0;
  int64_t numBeams = 1;
  double lengthPenalty = 1.0;
  EarlyStopping earlyStopping = EarlyStopping::False;
  int64_t numReturnSequences = 1;
  int64_t noRepeatNgramSize = 0;
  double repetitionPenalty = 1.0;
  /// encoder_repetition_penalty / encoder_no_repeat_ngram_size: over HF's
  /// encoder_input_ids (an encoder-decoder's source, a decoder-only prompt).
  double encoderRepetitionPenalty = 1.0;
  int64_t encoderNoRepeatNgramSize = 0;
  bool doSample = false;
  double temperature = 1.0;
  int64_t topK = 50; // HF's default; 0 turns top-k off
  double topP = 1.0;
  double minP = 0.0; // 0: off (HF: None)
  uint64_t seed = 0;
  /// Empty: the model's eos ids (ModelInfo::eosTokenIds).
  std::vector<int64_t> eosTokenIds;
  /// The server's ignore_eos: the model's eos ids end nothing; only
  /// eosTokenIds (the request's stop_token_ids) do.
  bool ignoreModelEos = false;
  // Logits processors HF models carry in their generation config, with HF's
  // meaning: lengths count the row's whole input_ids (the padded prompt, or
  // an encoder-decoder's decoder prompt, plus the tokens generated).
  int64_t minLength = 0;                    ///< min_length: no eos before it
  int64_t forcedBosTokenId = -1;            ///< forced_bos_token_id (-1: none)
  std::vector<int64_t> forcedEosTokenIds;   ///< forced_eos_token_id, forced at max length - 1
  std::vector<int64_t> suppressTokens;      ///< suppress_tokens: never chosen
  std::vector<int64_t> beginSuppressTokens; ///< begin_suppress_tokens: not as the first new token
  /// exponential_decay_length_penalty (start index, decay factor); start < 0: off.
  int64_t expDecayStart = -1;
  double expDecayFactor = 1.0;
  /// sequence_bias: (token sequence, bias) pairs, HF's list form.
  std::vector<std::pair<std::vector<int64_t>, float>> sequenceBias;
  /// bad_words_ids: sequences never completed.
  std::vector<std::vector<int64_t>> badWordsIds;
  bool renormalizeLogits = false; ///< renormalize_logits: log-softmax after the processors
  /// OpenAI's presence_penalty / frequency_penalty (the server's; HF has
  /// none): each token generated so far, c times, gets -(presence +
  /// frequency * c) added to its raw score, first, summed into the sequence
  /// bias row (LogitsProcessors.h). 0: off.
  double presencePenalty = 0.0, frequencyPenalty = 0.0;
  // What selects a decoding mode Hugging Face 5.x no longer runs itself
  // (group beam search, constrained beam search, contrastive search, DoLa:
  // Hub code behind trust_remote_code). Read so that such a config is
  // refused as HF refuses it, not run as plain beam search or greedy.
  int64_t numBeamGroups = 1;     ///< num_beam_groups
  double diversityPenalty = 0.0; ///< diversity_penalty (group beam search's; plain beam search ignores it)
  double penaltyAlpha = 0.0;     ///< penalty_alpha (> 0 with top_k > 1 in greedy search: contrastive search)
  bool forceWords = false;       ///< force_words_ids or constraints given
  bool dolaLayers = false;       ///< dola_layers given
  /// HF's name for the decoding mode these select ("Group Beam Search",
  /// ...; GenerationMode's name as HF prints it) and its Hub repo; empty
  /// when the mode is one genrun runs (greedy, sampling, beam search).
  std::pair<std::string, std::string> hubMode() const;
  // Sampling warpers past min_p (HF's defaults: off).
  double typicalP = 1.0;
  double epsilonCutoff = 0.0;
  double etaCutoff = 0.0;
  /// stop_strings: a row ends with the token that completes one of them in
  /// its text (HF's StopStringCriteria; search/StopStrings.h). Needs
  /// `tokenizer`.
  std::vector<std::string> stopStrings;
  /// The plan's tokenizer, which stop_strings are read with (not owned;
  /// null: the plan carries none).
  const text::Tokenizer *tokenizer = nullptr;
  /// Any processor that needs the logits on the host (the GPU's own greedy
  /// choice applies none).
  bool hasLogitsProcessors() const;
  /// Prompts per batch; 0: as many as the plan's slots allow. Set a
  /// user's value through setBatchSize.
  int64_t batchSize = 0;

  /// How messages spell the options: genrun's flags (--max-new-tokens) or
  /// Hugging Face's keyword names (max_new_tokens: the Python package).
  enum class Spelling { Flags, Keywords };
  Spelling spelling = Spelling::Flags;
  /// `keyword` ("max_new_tokens") spelled for this config's messages.
  std::string option(const std::string &keyword) const;

  /// A batch size the user gave (genrun --batch-size, Python batch_size):
  /// at least 1. Leaving it out is how to ask for what the plan allows, so 0
  /// is refused here rather than read as "unset".
  Status setBatchSize(int64_t n);

  /// The plan's generation defaults (ModelInfo::generationDefaults: HF names
  /// and shapes) for every option not in `given` (HF names the user set).
  /// A value of the wrong type is an error naming the plan's field.
  Status applyDefaults(const json::Value &defaults, const std::vector<std::string> &given);

  /// max_length into max_new_tokens (see maxLength), given the longest
  /// decoder prompt (an encoder-decoder's: the start token, 1). An error
  /// when it leaves no room.
  Status resolveMaxLength(int64_t longestPrompt);

  /// Checks ranges and combinations of the options alone. Messages name the
  /// option as `spelling` says.
  Status validate() const;
  /// What Hugging Face warns about but runs: min new tokens above max new
  /// tokens (generation stops at the maximum). One line each, spelled as
  /// `spelling` says; genrun prints them, Python issues warnings.warn.
  std::vector<std::string> warnings() const;
  /// validate(), then the checks that need the model (eos ids in range, ...).
  Status validateFor(const ModelInfo &info) const;
  /// The eos ids in effect: eosTokenIds, or the model's.
  std::vector<int64_t> effectiveEos(const ModelInfo &info) const;
  /// Cache rows (slots) one prompt occupies: beams, or samples returned.
  int64_t rowsPerPrompt() const;
};

} // namespace genrt
