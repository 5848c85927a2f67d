// SentencePiece's precompiled normalization map (`precompiled_charsmap`,
// carried by T5-style tokenizer.json files and by SentencePiece models):
// a Darts double-array trie of byte strings whose values index a pool of
// NUL-terminated replacements. Read as Hugging Face's spm_precompiled reads
// it, with every array access bounds-checked (the map is untrusted input).
#pragma once
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace genrt {
namespace text {

class PrecompiledMap {
public:
  /// Parses the raw map: u32 trie size in bytes, the trie's u32 units, then
  /// the replacement pool (must be UTF-8).
  static Status parse(const std::string &raw, PrecompiledMap &out);

  /// The replacement for the shortest prefix of `chunk` the trie holds (what
  /// spm_precompiled's transform() returns), or nullptr.
  const std::string *transform(const std::string &chunk, std::string &scratch) const;

  /// tokenizers' Precompiled normalizer: per extended grapheme cluster, the
  /// whole cluster's replacement when it is shorter than 6 bytes and has one,
  /// else each code point's.
  std::string normalize(const std::string &text) const;

private:
  std::vector<uint32_t> trie_;
  std::string pool_;
};

} // namespace text
} // namespace genrt
