#include "runtime/text/Precompiled.h"

#include "runtime/text/Unicode.h"

#include <cstring>

namespace genrt {
namespace text {
namespace {

bool hasLeaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t value(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

} // namespace

Status PrecompiledMap::parse(const std::string &raw, PrecompiledMap &out) {
  if (raw.size() < 4)
    return Status::error("precompiled_charsmap: too short");
  uint32_t trieBytes;
  std::memcpy(&trieBytes, raw.data(), 4);
  if (trieBytes % 4 || trieBytes > raw.size() - 4)
    return Status::error("precompiled_charsmap: the trie size does not fit the map");
  out.trie_.resize(trieBytes / 4);
  std::memcpy(out.trie_.data(), raw.data() + 4, trieBytes);
  out.pool_ = raw.substr(4 + trieBytes);
  if (!isValidUtf8(out.pool_))
    return Status::error("precompiled_charsmap: the replacements are not valid UTF-8");
  if (out.trie_.empty())
    return Status::error("precompiled_charsmap: an empty trie");
  return Status::ok();
}

const std::string *PrecompiledMap::transform(const std::string &chunk, std::string &scratch) const {
  size_t node = 0;
  uint32_t unit = trie_[0];
  node ^= offset(unit);
  for (unsigned char c : chunk) {
    if (c == 0)
      break;
    node ^= c;
    if (node >= trie_.size())
      return nullptr;
    unit = trie_[node];
    if (label(unit) != c)
      return nullptr;
    node ^= offset(unit);
    if (node >= trie_.size())
      return nullptr;
    if (hasLeaf(unit)) {
      size_t at = value(trie_[node]);
      if (at > pool_.size())
        return nullptr;
      size_t end = pool_.find('\0', at);
      scratch = pool_.substr(at, (end == std::string::npos ? pool_.size() : end) - at);
      // A replacement starting inside a character would be a broken map
      // (Rust would panic slicing there): treat it as no replacement.
      if (!isValidUtf8(scratch))
        return nullptr;
      return &scratch;
    }
  }
  return nullptr;
}

std::string PrecompiledMap::normalize(const std::string &text) const {
  std::vector<size_t> off;
  std::vector<char32_t> cps = decodeUtf8(text, &off);
  std::vector<size_t> bounds = graphemeBoundaries(cps);
  std::string out, scratch;
  out.reserve(text.size());
  for (size_t g = 0; g + 1 < bounds.size(); ++g) {
    size_t b = off[bounds[g]], e = off[bounds[g + 1]];
    std::string cluster = text.substr(b, e - b);
    if (cluster.size() < 6) {
      if (const std::string *r = transform(cluster, scratch)) {
        out += *r;
        continue;
      }
    }
    for (size_t i = bounds[g]; i < bounds[g + 1]; ++i) {
      std::string ch = text.substr(off[i], off[i + 1] - off[i]);
      const std::string *r = transform(ch, scratch);
      out += r ? *r : ch;
    }
  }
  return out;
}

} // namespace text
} // namespace genrt
