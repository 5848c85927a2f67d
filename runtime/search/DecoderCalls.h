// The one place the searches call the Decoder to run a step: a StepIO
// holds one forward's chunks, what each chunk must give back (its logits,
// its greedy token, its token under a sampling rule, its beam candidates,
// or nothing: a piece of a prompt that is not the prompt's end), whether it
// gives every token's logits too (a prompt's log-probabilities), and the
// slot reorders due before it. runStep() answers it with as few decoder
// calls as it can: one call of the chunks' common kind when they share one
// (the device then chooses where the logits are), else the logits of every
// chunk and each chunk's choice made here on the host by the very rule the
// decoder's own host path follows (runtime/choice/). Batch mode (generate()) and the server (runtime/serve)
// both step through here, over the same per-request searches.
#pragma once
#include "runtime/Decoder.h"

#include <cstdint>
#include <vector>

namespace genrt {
namespace search {

enum class Want : uint8_t {
  None,   // a prompt piece that is not the prompt's end: no output
  Logits, // the chunk's logits (the host applies processors and warpers)
  Greedy, // argmax and its log-softmax, no processors
  Tokens, // rules[firstRule]'s edits, then `rule`, the draw `draw`
  Beams,  // `rules` rules from rules[firstRule], the best `k` candidates each
};

struct StepIO {
  struct Entry {
    Want want = Want::None;
    // Tokens / Beams: rules[firstRule .. firstRule + rules).
    int32_t firstRule = 0, rules = 0;
    int64_t k = 0;       // Beams
    double draw = 0;     // Tokens
    SampleRule rule;     // Tokens
    // Answers.
    int64_t token = 0;     // Greedy, Tokens
    float logprob = 0.f;   // Greedy, Tokens
    int64_t logitsRow = -1; // Logits: its row of `logits`
    int64_t firstRow = -1;  // a chunk with everyToken: its first token's row of `logits`
    int64_t firstCand = 0;  // Beams: its rules * k candidates from candTokens[firstCand]
  };
  std::vector<Chunk> chunks;
  std::vector<Entry> entries; // one a chunk
  std::vector<BeamRow> rules;
  // Answers.
  std::vector<float> logits; // rows of vocab floats
  std::vector<int32_t> candTokens;
  std::vector<float> candScores;
  // Reorders due before the forward (Decoder::reorderSlots with shared).
  std::vector<int32_t> dst, src;
  std::vector<int64_t> shared;

  /// Appends a chunk; returns its index.
  size_t add(int32_t slot, std::vector<int64_t> tokens, Want want);
  /// Appends a chunk under `rows` rules (Tokens: 1; Beams: n) given next.
  size_t addRules(int32_t slot, std::vector<int64_t> tokens, Want want, const BeamRow *rows, int32_t n);
  /// A reorder due before the next forward (dst == src is dropped).
  void reorder(int32_t d, int32_t s, int64_t sharedPositions);
  /// Marks chunk i as giving every token's logits (Chunk::everyToken: a
  /// prompt's log-probabilities), read from entries[i].firstRow on.
  void everyToken(size_t i) { chunks[i].everyToken = true; }
  /// Logits row of chunk i (Want::Logits).
  const float *logitsOf(size_t i, int64_t vocab) const { return logits.data() + entries[i].logitsRow * vocab; }
  /// Clears the chunks and answers (not the reorders: runStep does those).
  void clearChunks();
};

/// Runs io's reorders, then its chunks through one forward; fills the
/// answers. Fails as the decoder does (nothing answered).
Status runStep(Decoder &decoder, StepIO &io);
/// Runs only io's reorders (a step with no chunks).
Status runReorders(Decoder &decoder, StepIO &io);
/// Encoder-decoder models: sources[i] for slots[i] (Decoder::encodeSources).
Status encodeSources(Decoder &decoder, const std::vector<std::vector<int64_t>> &sources,
                     const std::vector<std::vector<int32_t>> &slots);
/// Empties the slots (Decoder::resetSlot).
void resetSlots(Decoder &decoder, const std::vector<int32_t> &slots);
/// Whether the decoder chooses tokens under `rule` where the logits are
/// (Decoder::choosesTokens): a search then asks for Want::Tokens.
bool decoderChoosesTokens(const Decoder &decoder, const SampleRule &rule);

} // namespace search
} // namespace genrt
