// tokenizer.json normalizers: Sequence, Prepend, Replace, Strip, Precompiled
// and the Unicode normal forms NFC, NFD, NFKC, NFKD (Qwen2's tokenizers
// start with NFC). Any other type is refused by name.
#include "runtime/text/Normalize.h"
#include "runtime/text/Precompiled.h"
#include "runtime/text/Regex.h"
#include "runtime/text/TextSteps.h"
#include "runtime/text/Unicode.h"

namespace genrt {
namespace text {
namespace {

class SequenceNormalizer : public Normalizer {
public:
  std::vector<std::unique_ptr<Normalizer>> steps;
  void normalize(std::string &s) const override {
    for (const auto &n : steps)
      n->normalize(s);
  }
};

class Prepend : public Normalizer {
public:
  std::string prefix;
  void normalize(std::string &s) const override {
    if (!s.empty())
      s.insert(0, prefix);
  }
};

class Replace : public Normalizer {
public:
  Regex pattern;
  std::string content;
  void normalize(std::string &s) const override {
    std::string out;
    for (const Regex::Piece &p : pattern.findMatches(s))
      out += p.isMatch ? content : s.substr(p.begin, p.end - p.begin);
    s = std::move(out);
  }
};

class Strip : public Normalizer {
public:
  bool left = false, right = false;
  void normalize(std::string &s) const override {
    std::vector<size_t> off;
    std::vector<char32_t> cps = decodeUtf8(s, &off);
    size_t b = 0, e = cps.size();
    while (left && b < e && isWhiteSpace(cps[b]))
      ++b;
    while (right && e > b && isWhiteSpace(cps[e - 1]))
      --e;
    s = s.substr(off[b], off[e] - off[b]);
  }
};

class Precompiled : public Normalizer {
public:
  PrecompiledMap map;
  void normalize(std::string &s) const override { s = map.normalize(s); }
};

class UnicodeNormalizer : public Normalizer {
public:
  NormalForm form = NormalForm::NFC;
  void normalize(std::string &s) const override { s = text::normalize(s, form); }
};

Status base64Decode(const std::string &in, std::string &out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; ++i) {
    int v = val(in[i]);
    if (v < 0)
      return Status::error("precompiled_charsmap: not base64");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  for (; i < in.size(); ++i)
    if (in[i] != '=')
      return Status::error("precompiled_charsmap: not base64");
  return Status::ok();
}

} // namespace

Status parseNormalizer(const json::Value &v, std::unique_ptr<Normalizer> &out) {
  out.reset();
  if (v.isNull())
    return Status::ok();
  std::string type = typeOf(v);
  if (type == "Sequence") {
    auto seq = std::make_unique<SequenceNormalizer>();
    if (Status s = parseSteps(v, "normalizers", parseNormalizer, seq->steps); !s)
      return s;
    out = std::move(seq);
  } else if (type == "Prepend") {
    auto p = std::make_unique<Prepend>();
    if (Status s = optionalString(v, "prepend", p->prefix); !s)
      return s;
    out = std::move(p);
  } else if (type == "Replace") {
    auto r = std::make_unique<Replace>();
    const json::Value *pat = v.find("pattern");
    if (!pat)
      return Status::error("normalizer Replace: no 'pattern'");
    if (Status s = parsePattern(*pat, r->pattern); !s)
      return s;
    if (Status s = optionalString(v, "content", r->content); !s)
      return s;
    out = std::move(r);
  } else if (type == "Strip") {
    auto st = std::make_unique<Strip>();
    if (Status s = optionalBool(v, "strip_left", st->left); !s)
      return s;
    if (Status s = optionalBool(v, "strip_right", st->right); !s)
      return s;
    out = std::move(st);
  } else if (NormalForm form; normalFormNamed(type, form)) {
    auto n = std::make_unique<UnicodeNormalizer>();
    n->form = form;
    out = std::move(n);
  } else if (type == "Precompiled") {
    auto p = std::make_unique<Precompiled>();
    std::string b64, raw;
    if (Status s = optionalString(v, "precompiled_charsmap", b64); !s)
      return s;
    if (Status s = base64Decode(b64, raw); !s)
      return s;
    if (Status s = PrecompiledMap::parse(raw, p->map); !s)
      return s;
    out = std::move(p);
  } else {
    return Status::error("normalizer '" + type + "' is not supported");
  }
  return Status::ok();
}

} // namespace text
} // namespace genrt
