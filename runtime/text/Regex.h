// A small backtracking regex engine for the patterns tokenizer.json files
// carry (Split pre-tokenizers, Replace normalizers and decoders): the
// Oniguruma syntax and leftmost-first semantics that Hugging Face
// `tokenizers` uses, over code points. It takes alternation, groups
// ((...), (?:...), (?i:...), (?i)), lookahead ((?=...), (?!...)), classes
// with ranges and \s \S \d \D \w \W \p{L} \p{N} \p{M} (and \P / [^...]),
// ., ^, $, \A, \z, and the quantifiers * + ? {n} {n,} {n,m} (greedy or
// lazy). A repeated group must have a bounded count (at most 16): the
// families this serves never repeat a group, and a bound keeps the
// recursion bounded whatever the text. Anything else is a compile error,
// never a silent difference.
#pragma once
#include "runtime/Status.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace genrt {
namespace text {

class Regex {
public:
  Regex();
  ~Regex();
  Regex(Regex &&) noexcept;
  Regex &operator=(Regex &&) noexcept;

  /// Compiles `pattern` (UTF-8). Errors name the construct that is not supported.
  static Status compile(const std::string &pattern, Regex &out);
  /// A pattern that matches `literal` exactly (tokenizers' String patterns).
  static Regex literal(const std::string &literal);

  /// Non-overlapping matches, left to right, as [start, end) code point
  /// indices: what tokenizers' find_iter yields. An empty match advances the
  /// search by one code point.
  std::vector<std::pair<size_t, size_t>> findAll(const std::vector<char32_t> &text) const;

  /// Splits `text` (UTF-8) into pieces, each flagged as a match or not
  /// (tokenizers' Pattern::find_matches), with byte offsets.
  struct Piece {
    size_t begin, end;
    bool isMatch;
  };
  std::vector<Piece> findMatches(const std::string &text) const;

  struct Node;

private:
  std::unique_ptr<std::vector<Node>> root_;
};

} // namespace text
} // namespace genrt
