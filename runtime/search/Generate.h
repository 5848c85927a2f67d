// Text generation with Hugging Face `generate` semantics (transformers 5.x):
// greedy search, sampling and beam search, driven through a genrt::Decoder.
//
// Prompts are grouped into batches; each batch is prefilled in one packed
// forward call (no padding), then decoded one token per live row per step.
// The items of a batch run in lockstep like HF's batched generate; for beam
// search that makes the stopping of the whole batch depend on every item
// (HF's "any item can still improve" loop condition). An item that can no
// longer improve is frozen by HF's own -1e9 masking, so in practice each
// item's result does not depend on its batch companions, but bit-for-bit
// parity with HF is only claimed for the same batch composition.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Status.h"
#include "runtime/search/GenerationConfig.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace genrt {

struct Prompt {
  std::vector<int64_t> inputIds;
  /// Empty, or one 0/1 per input id. Masked (0) positions are not fed to the
  /// model, but they stay in the history that repetition_penalty and
  /// no_repeat_ngram_size look at: HF's padded input_ids hold the pad tokens
  /// and its processors see them. So a left-padded HF batch row reproduces
  /// HF exactly when passed with its attention_mask.
  std::vector<int64_t> attentionMask;
};

struct GeneratedSequence {
  /// Generated tokens only (no prompt), ending with eos if one was produced.
  std::vector<int64_t> outputIds;
  /// Beam search: HF's sequences_scores (sum of processed log-probs divided
  /// by generated_length ** length_penalty). Greedy and sampling: the sum of
  /// the chosen tokens' log-probs under the processed (and, when sampling,
  /// warped) distribution they were picked from.
  double score = 0;
};

struct GenerationResult {
  /// num_return_sequences entries: best first for beam search, in draw
  /// order for sampling.
  std::vector<GeneratedSequence> sequences;
};

struct GenerationStats {
  double firstTokenSeconds = 0; // from generate() start to the first token of the first batch
  double totalSeconds = 0;
  int64_t promptTokens = 0;     // tokens prefilled (masked positions excluded)
  int64_t generatedTokens = 0;  // tokens in all returned sequences
  int64_t decodeSteps = 0;      // search steps, over all batches
  int64_t forwardCalls = 0;
  int64_t decodeForwardCalls = 0; // the one-token-per-row steps after each batch's first
  double decodeSeconds = 0;       // wall time inside those calls
  int64_t batches = 0;
};

/// Watches a generate() call as it runs: the hook behind genrun --stream and
/// the Python package's stream(). Everything it is told is final (never
/// revised later). Called on the generating thread, in the order things
/// happen; prompts of one batch interleave. Device-neutral: the search loop
/// calls it on the host between steps, with ids it already holds.
class GenerationObserver {
public:
  virtual ~GenerationObserver() = default;
  /// Greedy and sampling, every step: `token` was appended to sequence
  /// `sequence` (the returned sequence's index) of prompt `prompt`. `last`:
  /// the sequence ends with it (eos, or max_new_tokens reached).
  virtual void onToken(size_t prompt, int64_t sequence, int64_t token, bool last) {}
  /// Greedy and sampling, right before onToken of a sequence's last token:
  /// `stopped` when eos or a stop string ended it, false when max_new_tokens did.
  virtual void onStopReason(size_t prompt, int64_t sequence, bool stopped) {}
  /// Greedy and sampling with log-probabilities asked for (the server's
  /// `logprobs`), right before onToken: the token's log_softmax under the
  /// model's raw logits, and the `top` likeliest tokens' (best first).
  virtual void onTokenLogprobs(size_t prompt, int64_t sequence, int64_t token, float logprob,
                               const std::vector<std::pair<int64_t, float>> &top) {}
  /// Returned sequence `sequence` of prompt `prompt` is complete, with its
  /// score: greedy and sampling right after its last token; beam search
  /// (`sequence` = rank, best first) once the prompt's finished hypotheses can
  /// no longer change, i.e. HF's stopping heuristic says the prompt cannot
  /// improve (or its set is full with early_stopping=True, or the batch ends).
  virtual void onSequence(size_t prompt, int64_t sequence, const GeneratedSequence &seq) {}
  /// Every sequence of `prompt` is complete: `result` is exactly what
  /// generate() returns for it.
  virtual void onPromptDone(size_t prompt, const GenerationResult &result) {}
  /// Polled once per search step; true stops generate(), which then fails
  /// with "generation stopped" (what was reported so far stays valid).
  virtual bool shouldStop() { return false; }
  /// False: generate() drops each batch's results once onPromptDone has had
  /// them and returns none, so a stream written as it goes (genrun
  /// --stream) holds no more memory after 20,000 prompts than after 1,000.
  virtual bool keepResults() const { return true; }
};

/// Checks one prompt against the model and config: token ids inside the
/// vocabulary, mask shape and values, something left after masking, room for
/// max_new_tokens within the plan's maximum length. Messages name the field.
Status validatePrompt(const Prompt &prompt, const ModelInfo &info, const GenerationConfig &cfg);

/// Prompts per batch for `cfg` on a decoder with `maxSlots` cache slots:
/// cfg.batchSize, or as many as fit. Fails when not even one prompt fits,
/// when cfg.batchSize asks for more than fit, or when several rows a prompt
/// would generate more than a plan of shared prompts holds (max_new_tokens).
Status batchSizeFor(const GenerationConfig &cfg, const ModelInfo &info, int32_t maxSlots, int64_t &batchSize);

/// A generate() call checked against a decoder's model, once: made only by
/// checkGeneration, so a front end that checks its input before committing
/// to anything (genrun's output file, the Python package's job) does not
/// have it checked again.
class CheckedGeneration {
public:
  const GenerationConfig &config() const { return cfg_; }
  const std::vector<Prompt> &prompts() const { return prompts_; }
  int64_t batchSize() const { return batchSize_; } // prompts a batch (batchSizeFor)

private:
  friend Status checkGeneration(const ModelInfo &, int32_t, const GenerationConfig &, std::vector<Prompt>,
                                CheckedGeneration &, const std::vector<std::string> *);
  GenerationConfig cfg_;
  std::vector<Prompt> prompts_;
  int64_t batchSize_ = 0;
};

/// Checks `cfg` (validateFor the model, batch size, stop strings) and every
/// prompt (validatePrompt) for a run on a decoder of this model with
/// `maxSlots` cache slots. A bad prompt's message starts with its name:
/// names[n] where given (genrun: "prompts.jsonl:3"), else "prompt n".
Status checkGeneration(const ModelInfo &info, int32_t maxSlots, const GenerationConfig &cfg,
                       std::vector<Prompt> prompts, CheckedGeneration &out,
                       const std::vector<std::string> *names = nullptr);

/// Generates for every prompt; `results` gets one entry per prompt, in order.
/// `observer` (optional) is told about tokens and sequences as they become final.
Status generate(Decoder &decoder, const CheckedGeneration &request, std::vector<GenerationResult> &results,
                GenerationStats *stats = nullptr, GenerationObserver *observer = nullptr);
/// checkGeneration, then generate().
Status generate(Decoder &decoder, const GenerationConfig &cfg, const std::vector<Prompt> &prompts,
                std::vector<GenerationResult> &results, GenerationStats *stats = nullptr,
                GenerationObserver *observer = nullptr);

} // namespace genrt
