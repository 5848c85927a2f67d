// Incremental detokenization in the manner of tokenizers' DecodeStream: the
// ids since the last emission are decoded together with the one before them
// (the "prefix"), and only the text past the prefix's decoding is new. Text
// ending in U+FFFD waits: the next byte token may complete the character;
// so does a run of ByteFallback byte tokens, which renders as a whole.
#include "runtime/text/Tokenizer.h"

namespace genrt {
namespace text {

namespace {
// A character is at most 4 bytes, so at most 4 byte tokens.
constexpr size_t kMaxCharTokens = 4;

bool endsWithReplacement(const std::string &s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
} // namespace

std::string StreamDecoder::push(int64_t id) {
  ids_.push_back(id);
  if (tok_.continuesByteRun(id))
    return std::string();
  std::string text = tok_.decode(ids_, skip_);
  if (text.size() <= emitted_.size() || endsWithReplacement(text) ||
      text.compare(0, emitted_.size(), emitted_) != 0)
    return std::string();
  std::string fresh = text.substr(emitted_.size());
  // Restart the window at the shortest run of last ids that decodes
  // cleanly on its own, to something (a skipped special token would leave
  // the next token first in one decoding and not in the other): decoders that treat the first token specially
  // (Metaspace, Strip) then see the same first token in the prefix and in
  // the next decoding, and a byte run (which ByteFallback judges whole) is
  // cut only where a character starts. Where no such run is near (invalid
  // bytes), the window grows.
  emitted_ = std::move(text);
  for (size_t k = 1; k <= kMaxCharTokens && k <= ids_.size(); ++k) {
    std::vector<int64_t> tail(ids_.end() - k, ids_.end());
    std::string d = tok_.decode(tail, skip_);
    if (!d.empty() && d.find("\xEF\xBF\xBD") == std::string::npos) {
      ids_ = std::move(tail);
      emitted_ = std::move(d);
      break;
    }
  }
  return fresh;
}

std::string StreamDecoder::finish() {
  std::string text = tok_.decode(ids_, skip_);
  std::string rest = text.size() > emitted_.size() && text.compare(0, emitted_.size(), emitted_) == 0
                         ? text.substr(emitted_.size())
                         : std::string();
  ids_.clear();
  emitted_.clear();
  return rest;
}

} // namespace text
} // namespace genrt
