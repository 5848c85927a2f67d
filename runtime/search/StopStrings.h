// stop_strings: Hugging Face's StopStringCriteria (transformers 5.23). A
// sequence stops once the token just appended completes one of the strings
// in its text: the string ends inside that last token (starting there or in
// earlier tokens); one wholly in the past does not count. Tokens read as HF reads them
// (Tokenizer::stopStringText: raw bytes for byte-level vocabularies), and
// strings are matched as UTF-8 bytes.
#pragma once
#include "runtime/Status.h"
#include "runtime/text/Tokenizer.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace genrt {
namespace search {

class StopStrings {
public:
  /// No strings: hits() is always false (`tok` may then be null).
  StopStrings(std::vector<std::string> strings, const text::Tokenizer *tok);

  /// HF's refusal (StopStringCriteria's preprocessing): an error when no
  /// token of the vocabulary can end any of the strings — the last token of
  /// a match must begin with the end of a string, or hold a whole one.
  static Status check(const std::vector<std::string> &strings, const text::Tokenizer &tok);

  bool empty() const { return strings_.empty(); }
  /// True when `head` + `mid` + `last` (a sequence whose newest token is
  /// `last`) ends a stop string by HF's rule. `mid` may be empty.
  bool hits(const std::vector<int64_t> &head, const std::vector<int64_t> &mid, int64_t last) const;
  /// The same for a sequence whose newest token is its last element.
  bool hits(const std::vector<int64_t> &seq) const;

private:
  template <typename At> bool hitsAt(At tokenFromEnd, size_t n) const;
  const std::string &tokenText(int64_t id) const;

  std::vector<std::string> strings_;
  const text::Tokenizer *tok_;
  mutable std::unordered_map<int64_t, std::string> texts_;
};

} // namespace search
} // namespace genrt
