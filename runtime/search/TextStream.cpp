#include "runtime/search/TextStream.h"

namespace genrt {

const char *streamEventKindName(StreamEvent::Kind k) {
  switch (k) {
  case StreamEvent::Kind::Token:
    return "token";
  case StreamEvent::Kind::Sequence:
    return "sequence";
  case StreamEvent::Kind::Done:
    return "done";
  }
  return "?";
}

// Output text skips special tokens (eos, pad), as genrun's "text" does.
std::string TextStreamObserver::decode(const std::vector<int64_t> &ids) const {
  return tok_ ? tok_->decode(ids, /*skipSpecialTokens=*/true) : std::string();
}

void TextStreamObserver::onToken(size_t prompt, int64_t sequence, int64_t token, bool last) {
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Token;
  ev.prompt = prompt;
  ev.sequence = sequence;
  ev.tokenId = token;
  if (tok_) {
    auto key = std::make_pair(prompt, sequence);
    auto it = decoders_.try_emplace(key, *tok_, /*skipSpecialTokens=*/true).first;
    ev.text = it->second.push(token);
    if (last) {
      ev.text += it->second.finish();
      decoders_.erase(it);
    }
  }
  sink_(std::move(ev));
}

void TextStreamObserver::onSequence(size_t prompt, int64_t sequence, const GeneratedSequence &seq) {
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Sequence;
  ev.prompt = prompt;
  ev.sequence = sequence;
  ev.seq = seq;
  ev.text = decode(seq.outputIds);
  sink_(std::move(ev));
}

void TextStreamObserver::onPromptDone(size_t prompt, const GenerationResult &result) {
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Done;
  ev.prompt = prompt;
  ev.result = result;
  if (tok_)
    for (const GeneratedSequence &s : result.sequences)
      ev.texts.push_back(decode(s.outputIds));
  sink_(std::move(ev));
}

} // namespace genrt
