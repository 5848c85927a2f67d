// The interface the search loop drives: a model with a KV cache of
// `maxSlots()` slots, each holding up to `maxLength` tokens of one sequence
// (one beam). The search decides which tokens run in which slot; the decoder
// runs them as one packed batch (no padding) and answers, for the last token
// of each chunk that asks, the search's choice request (runtime/Choice.h).
// runtime/Session.h is the decoder over a device's executor.
#pragma once
#include "runtime/Choice.h"
#include "runtime/json/Json.h"
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
  /// Whether the chunk's last token gives an output row (false: a part of a
  /// prompt that is not its end, run only for its cache).
  bool output = true;
  /// Every token of the chunk gives an output row, in token order (a
  /// prompt's log-probabilities: row i's logits predict token i + 1); the
  /// chunk's last row is then its output row as above. Only with a Logits
  /// request.
  bool everyToken = false;
  /// The output rows the chunk gives.
  int64_t rows() const { return everyToken ? static_cast<int64_t>(tokens.size()) : output ? 1 : 0; }
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
  /// positions slotLength..) and answers `request` for the chunks that ask
  /// for output, in chunk order (answer.logits row i: the i-th such chunk's
  /// last token, or each of an everyToken chunk's tokens). Fails (without changing any slot) if a slot would exceed
  /// maxLength, a token id is out of range or the request does not fit the
  /// rows.
  virtual Status forward(const std::vector<Chunk> &chunks, const ChoiceRequest &request, ChoiceAnswer &answer) = 0;
  /// Whether forward() answers requests like `request` in a decode step
  /// where the logits are (a GPU: only the choices cross to the host). The
  /// search asks once, to pick between a Tokens request and the logits with
  /// its host processors; every request is answered either way.
  virtual bool chooses(const ChoiceRequest & /*request*/) const { return false; }

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
