#include "runtime/search/StopStrings.h"

#include <algorithm>

namespace genrt {
namespace search {

StopStrings::StopStrings(std::vector<std::string> strings, const text::Tokenizer *tok)
    : strings_(std::move(strings)), tok_(tok) {}

// Texts are made as tokens are met: a step meets a few, the vocabulary is
// large. The map's references stay valid as it grows. One generate() call
// owns the object and reads it from its one thread: no lock.
const std::string &StopStrings::tokenText(int64_t id) const {
  auto it = texts_.find(id);
  if (it != texts_.end())
    return it->second;
  return texts_.emplace(id, tok_->stopStringText(id)).first->second;
}

// The first step of hitsAt's walk, for one token: whether `t` can be the
// last token of a match of `s`.
static bool canEnd(const std::string &s, const std::string &t) {
  const size_t L = s.size();
  for (size_t m = 1; m <= t.size(); ++m)
    if (m > L ? t.compare(m - L, L, s) == 0 : s.compare(L - m, m, t, 0, m) == 0)
      return true;
  return false;
}

Status StopStrings::check(const std::vector<std::string> &strings, const text::Tokenizer &tok) {
  if (strings.empty())
    return Status::ok();
  for (int64_t id = 0, n = tok.idLimit(); id < n; ++id) {
    const std::string t = tok.stopStringText(id);
    for (const std::string &s : strings)
      if (!s.empty() && canEnd(s, t))
        return Status::ok();
  }
  return Status::error("stop_strings: no token of the vocabulary can end any of them (characters the tokenizer "
                       "does not have?); Hugging Face refuses them too");
}

// HF's walk (_stop_string_get_matching_positions): the string ends after
// the last token's first m bytes, for some m >= 1 — either those m bytes are
// the string's last m (m <= L), or they end with the whole string (m > L:
// a match inside the token). Then, going back, each earlier token either
// holds all that is left of the string at its end (a match) or is itself the
// end of what is left (consumed), or the walk fails.
template <typename At> bool StopStrings::hitsAt(At tokenFromEnd, size_t n) const {
  if (n == 0)
    return false;
  const std::string &last = tokenText(tokenFromEnd(0));
  for (const std::string &s : strings_) {
    const size_t L = s.size();
    for (size_t m = 1; m <= last.size(); ++m) {
      if (m > L) {
        if (last.compare(m - L, L, s) == 0)
          return true;
        continue;
      }
      if (s.compare(L - m, m, last, 0, m) != 0)
        continue;
      size_t rem = L - m; // s[0, rem) still to match, ending at the token before
      for (size_t k = 1; rem > 0 && k < n; ++k) {
        const std::string &t = tokenText(tokenFromEnd(k));
        if (t.size() >= rem) {
          if (t.compare(t.size() - rem, rem, s, 0, rem) == 0)
            rem = 0;
          break;
        }
        if (s.compare(rem - t.size(), t.size(), t) != 0)
          break;
        rem -= t.size();
      }
      if (rem == 0)
        return true;
    }
  }
  return false;
}

bool StopStrings::hits(const std::vector<int64_t> &head, const std::vector<int64_t> &mid, int64_t last) const {
  if (strings_.empty())
    return false;
  const size_t m = mid.size(), h = head.size();
  return hitsAt(
      [&](size_t k) { return k == 0 ? last : k <= m ? mid[m - k] : head[h - (k - m)]; }, 1 + m + h);
}

bool StopStrings::hits(const std::vector<int64_t> &seq) const {
  if (strings_.empty())
    return false;
  const size_t n = seq.size();
  return hitsAt([&](size_t k) { return seq[n - 1 - k]; }, n);
}

} // namespace search
} // namespace genrt
