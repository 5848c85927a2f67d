// Generation events with their text: what a streaming front end shows
// (genrun --stream, the Python package's Generator.stream). One adapter
// turns the search loop's GenerationObserver calls into events, decoding
// each sequence incrementally with its own text::StreamDecoder, so that the
// CLI and Python stream the same pieces.
#pragma once
#include "runtime/search/Generate.h"
#include "runtime/text/Tokenizer.h"

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace genrt {

struct StreamEvent {
  enum class Kind {
    Token,    // greedy / sampling: one token of one sequence, every step
    Sequence, // one returned sequence is complete (beam search: its hypothesis is final)
    Done,     // every sequence of the prompt is complete
  };
  Kind kind = Kind::Token;
  size_t prompt = 0;
  int64_t sequence = -1; // Token, Sequence: the returned sequence's index (beam search: rank)
  int64_t tokenId = -1;  // Token
  /// Token: the text that became final with this token ("" while a
  /// character or a byte run is incomplete); the sequence's last token also
  /// carries whatever was held back, so a sequence's pieces concatenate to
  /// its text. Sequence: the whole text. Empty without a tokenizer.
  std::string text;
  GeneratedSequence seq;          // Sequence
  GenerationResult result;        // Done: what generate() returns for the prompt
  std::vector<std::string> texts; // Done: each sequence's text (with a tokenizer)
};

const char *streamEventKindName(StreamEvent::Kind k); // "token", "sequence", "done"

class TextStreamObserver : public GenerationObserver {
public:
  using Sink = std::function<void(StreamEvent &&)>;
  /// `tok` may be null (a plan without a tokenizer): events carry ids only.
  /// `stop` (optional) is polled once per step (GenerationObserver::shouldStop).
  TextStreamObserver(const text::Tokenizer *tok, Sink sink, std::function<bool()> stop = {})
      : tok_(tok), sink_(std::move(sink)), stop_(std::move(stop)) {}

  void onToken(size_t prompt, int64_t sequence, int64_t token, bool last) override;
  void onSequence(size_t prompt, int64_t sequence, const GeneratedSequence &seq) override;
  void onPromptDone(size_t prompt, const GenerationResult &result) override;
  bool shouldStop() override { return stop_ && stop_(); }
  bool keepResults() const override { return keepResults_; }
  /// genrun --stream writes each event as it comes and needs no results
  /// from generate() (GenerationObserver::keepResults).
  void dropResults() { keepResults_ = false; }

private:
  std::string decode(const std::vector<int64_t> &ids) const;

  const text::Tokenizer *tok_;
  Sink sink_;
  std::function<bool()> stop_;
  bool keepResults_ = true;
  // One incremental decoder per live (prompt, sequence); dropped at its end.
  std::map<std::pair<size_t, int64_t>, text::StreamDecoder> decoders_;
};

} // namespace genrt
