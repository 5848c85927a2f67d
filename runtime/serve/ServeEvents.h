// What the server's scheduler reports about its requests (runtime/serve/
// Scheduler.h), and the observer that turns one request's search into
// those events: text pieces decoded as tokens become final (never split
// inside a UTF-8 character: the tokenizer's StreamDecoder), log-probabilities
// when asked, why each sequence ended.
#pragma once
#include "runtime/search/Generate.h"
#include "runtime/search/PromptScores.h"
#include "runtime/text/Tokenizer.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace genrt {
namespace serve {

struct Event {
  enum class Kind : uint8_t {
    Token,    // greedy / sampling: one token of sequence `sequence`
    Sequence, // sequence `sequence` is complete (beam search: rank, best first)
    Done,     // the request is complete; nothing follows
    Error,    // the request failed (`text`: the message); nothing follows
    PromptLogprobs, // `prompt`: the prompt's tokens from position `sequence` on, each as the tokens before predict it
  };
  uint64_t request = 0;
  Kind kind = Kind::Token;
  int64_t sequence = -1;
  int64_t token = -1;  // Token
  /// Token: the text that became final with it; Sequence: the whole text;
  /// Error: the message. Empty without a tokenizer.
  std::string text;
  bool last = false;     // Token: the sequence's last token
  bool stopped = false;  // Token (last) / Sequence: eos or a stop string ended it, not the length
  bool haveLogprobs = false; // Token: log-probabilities were asked for
  float logprob = 0.f;   // Token, with log-probabilities asked for
  std::vector<std::pair<int64_t, float>> top; // Token: the likeliest tokens and theirs
  std::vector<int64_t> ids; // Sequence: its tokens
  std::vector<search::TokenScore> prompt; // PromptLogprobs
  double score = 0;         // Sequence
};

/// One request's GenerationObserver: appends its events to `out` (the
/// scheduler's list for the step), tagged with the request's id.
class RequestEvents final : public GenerationObserver {
public:
  RequestEvents(uint64_t request, const text::Tokenizer *tok, const std::vector<int64_t> &eos,
                std::vector<Event> *out)
      : request_(request), tok_(tok), eos_(eos), out_(out) {}
  void setOutput(std::vector<Event> *out) { out_ = out; }

  void onStopReason(size_t, int64_t sequence, bool stopped) override { stopped_[sequence] = stopped; }
  void onTokenLogprobs(size_t, int64_t, int64_t, float logprob,
                       const std::vector<std::pair<int64_t, float>> &top) override {
    logprob_ = logprob;
    top_ = top;
    haveLogprobs_ = true;
  }
  void onToken(size_t prompt, int64_t sequence, int64_t token, bool last) override;
  void onSequence(size_t prompt, int64_t sequence, const GeneratedSequence &seq) override;
  void onPromptDone(size_t prompt, const GenerationResult &result) override;
  bool keepResults() const override { return false; }
  /// Tokens reported so far, over every sequence.
  int64_t tokens() const { return tokens_; }

private:
  uint64_t request_;
  const text::Tokenizer *tok_;
  std::vector<int64_t> eos_;
  std::vector<Event> *out_;
  std::map<int64_t, text::StreamDecoder> decoders_; // per live sequence
  std::map<int64_t, bool> stopped_;
  float logprob_ = 0.f;
  std::vector<std::pair<int64_t, float>> top_;
  bool haveLogprobs_ = false;
  int64_t tokens_ = 0;
};

} // namespace serve
} // namespace genrt
