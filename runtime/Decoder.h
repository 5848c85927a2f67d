// The interface between the search loop and an executor (CPU or CUDA).
//
// An executor owns the model's weights and a KV cache of `maxSlots()` slots,
// each holding up to `maxLength()` tokens of one sequence (one beam). The
// search loop decides which tokens run in which slot; the executor runs them
// as one packed batch (no padding) and returns the logits of the last token
// of each chunk.
#pragma once
#include "runtime/BeamChoice.h"
#include "runtime/SampleChoice.h"
#include "runtime/Json.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace genrt {

/// Generation facts and defaults a plan carries (from config.json /
/// generation_config.json at compile time).
struct ModelInfo {
  int64_t vocabSize = 0;
  std::vector<int64_t> eosTokenIds;
  int64_t padTokenId = 0;
  int64_t bosTokenId = -1;
  int64_t decoderStartTokenId = -1; // encoder-decoder models only
  bool encoderDecoder = false;
  int64_t maxBatch = 0;  // sequences per batch the plan was sized for
  int64_t maxBeams = 0;  // beams per sequence
  int64_t maxLength = 0; // prompt + generated tokens per sequence (the decoder's)
  int64_t maxSourceLength = 0; // encoder-decoder: tokens per source (0: none)
  int64_t maxNewTokens = 0;    // tokens a beam generates past a prompt it shares (0: unbounded)
  /// The model's generation config as the plan records it (HF names, a JSON
  /// object; null in plans from before it): GenerationConfig::applyDefaults.
  json::Value generationDefaults;
};

/// Tokens to append to one slot's sequence.
struct Chunk {
  int32_t slot;
  std::vector<int64_t> tokens;
};

class Decoder {
public:
  virtual ~Decoder() = default;
  virtual const ModelInfo &info() const = 0;
  /// Number of cache slots (= maxBatch * maxBeams).
  virtual int32_t maxSlots() const = 0;

  /// Empties a slot (its sequence length becomes 0).
  virtual void resetSlot(int32_t slot) = 0;
  /// Current length (tokens cached) of a slot.
  virtual int64_t slotLength(int32_t slot) const = 0;

  /// Runs every chunk's tokens (appended after the slot's cached tokens, at
  /// positions slotLength..), and writes the logits of each chunk's last token
  /// to logits[i * vocabSize .. (i+1) * vocabSize). `logits` has room for
  /// chunks.size() rows. Fails (without changing any slot) if a slot would
  /// exceed maxLength or a token id is out of range.
  virtual Status forward(const std::vector<Chunk> &chunks, float *logits) = 0;

  /// forward(), then each chunk's greedy choice without logits processors:
  /// the first index of its largest logit (torch.argmax) and that token's
  /// log-softmax. This default chooses on the host from forward()'s logits;
  /// a Session over the GPU chooses where the logits are and copies back
  /// only the choices.
  virtual Status forwardGreedy(const std::vector<Chunk> &chunks, int64_t *tokens, float *logprobs);

  /// forward(), then each chunk's best k beam candidates by the rule of
  /// rows[i] (runtime/BeamChoice.h): tokens[i*k ..] and their scores. With n
  /// rules a chunk (rows.size() = n * chunks.size()), rule r ranks chunk r / n's
  /// logits: a prompt's step, where every beam starts from its logits. This
  /// default ranks on the host from forward()'s logits; a Session over the
  /// GPU ranks where the logits are and copies back only the candidates.
  virtual Status forwardBeams(const std::vector<Chunk> &chunks, const std::vector<BeamRow> &rows, int64_t k,
                              int32_t *tokens, float *scores);

  /// Whether forwardTokens() chooses where the logits are (a GPU: only the
  /// chosen ids cross to the host) for steps under `rule`. Without it the
  /// search runs its processors and warpers on the host from forward()'s
  /// logits (the CPU: the reference path).
  virtual bool choosesTokens(const SampleRule & /*rule*/) const { return false; }
  /// forward(), then each chunk's token by the rule of runtime/SampleChoice.h:
  /// rows[i]'s edits on the raw logits, then `rule` (greedy, or the warpers
  /// and a draw by draws[i]); tokens[i] and its logprob. This default
  /// chooses on the host from forward()'s logits.
  virtual Status forwardTokens(const std::vector<Chunk> &chunks, const std::vector<BeamRow> &rows,
                               const std::vector<double> &draws, const SampleRule &rule, int64_t *tokens,
                               float *logprobs);

  /// Beam reordering: for each k, slot dst[k] takes the cached contents (and
  /// length) that slot src[k] had before the call. Slots not named in dst are
  /// unchanged. A src may appear several times.
  virtual Status reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src) = 0;
  /// reorderSlots() where dst[k] already holds the first shared[k]
  /// positions of src[k] (the beams of one prompt): only the rest moves.
  virtual Status reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                              const std::vector<int64_t> & /*shared*/) {
    return reorderSlots(dst, src);
  }

  /// Encoder-decoder models: encodes one source sentence for all the slots
  /// listed (its beams); their cross-attention reads it. Decoder-only: unused.
  virtual Status encode(const std::vector<int64_t> &sourceIds, const std::vector<int32_t> &slots) {
    return Status::error("this model has no encoder");
  }
  /// encode() of sources[i] for slots[i], each; a Session packs them into as
  /// few @encode runs as the plan's src_tokens allows.
  virtual Status encodeSources(const std::vector<std::vector<int64_t>> &sources,
                               const std::vector<std::vector<int32_t>> &slots) {
    if (sources.size() != slots.size())
      return Status::error("encode: sources and slot lists differ in number");
    for (size_t i = 0; i < sources.size(); ++i)
      if (Status s = encode(sources[i], slots[i]); !s)
        return s;
    return Status::ok();
  }

  /// Bytes of device/host memory the executor holds (weights, caches, arena).
  virtual int64_t memoryBytes() const = 0;
  /// What those bytes are, for --stats (empty: nothing to add).
  virtual std::string memoryReport() const { return {}; }
  /// The device it runs on, for --stats ("cpu", "cuda: NVIDIA H100 ...").
  virtual std::string deviceName() const { return "cpu"; }
  /// A line for --stats on the KV caches: bytes as shared, bytes were every
  /// beam to keep its own copy, and the largest batch the device holds.
  virtual std::string kvReport() const { return {}; }
  /// A line for --stats on where tokens were chosen (empty: nothing to add).
  virtual std::string choiceReport() const { return {}; }
};

} // namespace genrt
