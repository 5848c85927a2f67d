// A fake genrt::Decoder for search tests.
//
// Its "model" is a pure function of the whole sequence a slot holds (and of
// the encoder source for encoder-decoder fakes): the logits are a fixed
// pseudo-random table indexed by a hash of every token so far. The slots
// keep real contents, so a search that feeds a token to the wrong slot, or
// reorders caches wrongly, gets different logits than the reference (which
// calls fakeLogits on the sequence it believes in) and the tests see it.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/choice/OnHost.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace fake {

struct FakeModel {
  int64_t vocab = 40;
  uint64_t seed = 1;
  float scale = 3.0f;     // logits are uniform in [-scale, scale) ...
  float eosBias = 0.0f;   // ... plus this for eos ids, to tune how soon beams end
  std::vector<int64_t> eos = {2};
};

inline uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Logits of the next token after `seq` (the tokens the model sees).
inline void fakeLogits(const FakeModel &m, const std::vector<int64_t> &source, const std::vector<int64_t> &seq,
                       float *out) {
  uint64_t h = splitmix(m.seed);
  for (int64_t s : source)
    h = splitmix(h ^ uint64_t(s) * 0x100000001B3ull);
  h = splitmix(h ^ 0xABCDEFull);
  for (int64_t t : seq)
    h = splitmix(h ^ uint64_t(t) * 0x100000001B3ull);
  for (int64_t v = 0; v < m.vocab; ++v) {
    uint64_t r = splitmix(h + uint64_t(v) * 0x9E3779B97F4A7C15ull);
    double u = double(r >> 11) * (1.0 / 9007199254740992.0); // [0, 1)
    out[v] = float((2 * u - 1) * m.scale);
  }
  for (int64_t e : m.eos)
    out[e] += m.eosBias;
}

struct ForwardCall {
  std::vector<genrt::Chunk> chunks;
  genrt::ChoiceKind kind = genrt::ChoiceKind::Logits;
};

class FakeDecoder : public genrt::Decoder {
public:
  FakeDecoder(FakeModel m, int64_t maxBatch, int64_t maxBeams, int64_t maxLength, bool encoderDecoder = false)
      : m_(std::move(m)) {
    info_.vocabSize = m_.vocab;
    info_.eosTokenIds = m_.eos;
    info_.maxBatch = maxBatch;
    info_.maxBeams = maxBeams;
    info_.maxLength = maxLength;
    info_.encoderDecoder = encoderDecoder;
    info_.decoderStartTokenId = encoderDecoder ? 0 : -1;
    lengthLimit = maxLength;
    slots_.assign(size_t(maxBatch * maxBeams), {});
    sources_.assign(slots_.size(), {});
    copiedEmpty_.assign(slots_.size(), false);
  }

  const genrt::ModelInfo &info() const override { return info_; }
  int32_t maxSlots() const override { return int32_t(slots_.size()); }
  void resetSlot(int32_t slot) override {
    slots_.at(size_t(slot)).clear();
    sources_.at(size_t(slot)).clear();
    copiedEmpty_.at(size_t(slot)) = false;
  }
  int64_t slotLength(int32_t slot) const override { return int64_t(slots_.at(size_t(slot)).size()); }

  // Answered from the fake logits by the runtime's host choice (as the
  // Session answers what its executor does not choose itself).
  genrt::Status forward(const std::vector<genrt::Chunk> &chunks, const genrt::ChoiceRequest &request,
                        genrt::ChoiceAnswer &answer) override {
    for (const genrt::Chunk &c : chunks) {
      if (c.slot < 0 || c.slot >= maxSlots())
        return genrt::Status::error("fake: bad slot " + std::to_string(c.slot));
      if (c.tokens.empty())
        return genrt::Status::error("fake: empty chunk");
      if (int64_t(slots_[c.slot].size() + c.tokens.size()) > lengthLimit)
        return genrt::Status::error("fake: slot " + std::to_string(c.slot) + " would exceed max length");
      for (int64_t t : c.tokens)
        if (t < 0 || t >= m_.vocab)
          return genrt::Status::error("fake: token out of range");
      if (info_.encoderDecoder && sources_[c.slot].empty())
        return genrt::Status::error("fake: slot " + std::to_string(c.slot) + " was never encoded");
      // Copying an empty slot is legal, but decoding on top of it means the
      // search lost track of where its prompt is (the junk it computes
      // might never reach the output, so the results alone cannot tell).
      if (slots_[c.slot].empty() && copiedEmpty_[c.slot])
        return genrt::Status::error("fake: slot " + std::to_string(c.slot) +
                                    " runs on a cache that was copied from an empty slot");
    }
    for (size_t a = 0; a < chunks.size(); ++a)
      for (size_t b = a + 1; b < chunks.size(); ++b)
        if (chunks[a].slot == chunks[b].slot)
          return genrt::Status::error("fake: slot named twice in one forward");
    int64_t rows = 0;
    for (const genrt::Chunk &c : chunks)
      rows += c.output;
    if (std::string why = request.check(rows, m_.vocab); !why.empty())
      return genrt::Status::error("fake: " + why);
    calls.push_back(ForwardCall{chunks, request.kind});
    std::vector<float> logits(static_cast<size_t>(rows * m_.vocab));
    int64_t row = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      auto &s = slots_[chunks[i].slot];
      s.insert(s.end(), chunks[i].tokens.begin(), chunks[i].tokens.end());
      if (chunks[i].output)
        fakeLogits(m_, sources_[chunks[i].slot], s, logits.data() + (row++) * m_.vocab);
    }
    return genrt::answerOnHost(request, logits.data(), rows, m_.vocab, answer);
  }

  genrt::Status reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src) override {
    if (dst.size() != src.size())
      return genrt::Status::error("fake: dst/src sizes differ");
    auto before = slots_;
    auto beforeSrc = sources_;
    for (size_t k = 0; k < dst.size(); ++k) {
      if (dst[k] < 0 || dst[k] >= maxSlots() || src[k] < 0 || src[k] >= maxSlots())
        return genrt::Status::error("fake: bad slot in reorder");
      slots_[dst[k]] = before[src[k]];
      sources_[dst[k]] = beforeSrc[src[k]];
      copiedEmpty_[dst[k]] = before[src[k]].empty();
    }
    ++reorders;
    return genrt::Status::ok();
  }

  genrt::Status encode(const std::vector<int64_t> &sourceIds, const std::vector<int32_t> &slots) override {
    if (!info_.encoderDecoder)
      return genrt::Status::error("this model has no encoder");
    for (int32_t s : slots)
      sources_.at(size_t(s)) = sourceIds;
    ++encodes;
    return genrt::Status::ok();
  }

  int64_t memoryBytes() const override { return 12345; }

  std::vector<ForwardCall> calls;
  int64_t lengthLimit; // what forward enforces; tests may set it below info().maxLength
  int reorders = 0;
  int encodes = 0;

private:
  FakeModel m_;
  genrt::ModelInfo info_;
  std::vector<std::vector<int64_t>> slots_;
  std::vector<std::vector<int64_t>> sources_;
  std::vector<bool> copiedEmpty_;
};

} // namespace fake
