// tokenizer.json decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace and Sequence (what GPT-2, Llama-2/3, Mistral, Qwen and T5 use),
// and the small JSON readers the steps share.
#include "runtime/text/Regex.h"
#include "runtime/text/TextSteps.h"
#include "runtime/text/Unicode.h"

namespace genrt {
namespace text {

const char *typeOf(const json::Value &v) {
  const json::Value *t = v.isObject() ? v.find("type") : nullptr;
  return t && t->isString() ? t->asString().c_str() : "";
}

Status optionalBool(const json::Value &v, const char *key, bool &out) {
  const json::Value *x = v.find(key);
  if (!x || x->isNull())
    return Status::ok();
  if (!x->isBool())
    return Status::error(std::string("'") + key + "' must be true or false");
  out = x->asBool();
  return Status::ok();
}

Status optionalString(const json::Value &v, const char *key, std::string &out) {
  const json::Value *x = v.find(key);
  if (!x || x->isNull())
    return Status::ok();
  if (!x->isString())
    return Status::error(std::string("'") + key + "' must be a string");
  out = x->asString();
  return Status::ok();
}

Status parsePattern(const json::Value &v, Regex &out) {
  if (v.isObject() && v.members().size() == 1 && v.members()[0].second.isString()) {
    const auto &[kind, text] = v.members()[0];
    if (kind == "String") {
      out = Regex::literal(text.asString());
      return Status::ok();
    }
    if (kind == "Regex")
      return Regex::compile(text.asString(), out);
  }
  return Status::error("a pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

namespace {

class SequenceDec : public TokenDecoder {
public:
  std::vector<std::unique_ptr<TokenDecoder>> steps;
  void decodeChain(std::vector<std::string> &t) const override {
    for (const auto &d : steps)
      d->decodeChain(t);
  }
  bool judgesByteRuns() const override {
    for (const auto &d : steps)
      if (d->judgesByteRuns())
        return true;
    return false;
  }
  bool isByteLevel() const override {
    for (const auto &d : steps)
      if (d->isByteLevel())
        return true;
    return false;
  }
};

class ByteLevelDec : public TokenDecoder {
public:
  bool isByteLevel() const override { return true; }
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string bytes;
    for (const std::string &t : tokens) {
      // A token with any character outside the alphabet goes through as
      // its own UTF-8 bytes (an added token such as "<|endoftext|>" maps
      // fine; one holding a space does not).
      std::vector<char32_t> cps = decodeUtf8(t);
      std::string mapped;
      bool all = true;
      for (char32_t c : cps) {
        int b = byteLevelByte(c);
        if (b < 0) {
          all = false;
          break;
        }
        mapped += char(b);
      }
      bytes += all ? mapped : t;
    }
    tokens.assign(1, utf8Lossy(bytes));
  }
};

class MetaspaceDec : public TokenDecoder {
public:
  std::string replacement;
  bool skipFirst = true;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string &t = tokens[i];
      for (size_t p = 0; p < t.size();) {
        if (t.compare(p, replacement.size(), replacement) == 0) {
          if (!(i == 0 && skipFirst))
            out += ' ';
          p += replacement.size();
        } else {
          out += t[p++];
        }
      }
      tokens[i] = std::move(out);
    }
  }
};

class ByteFallbackDec : public TokenDecoder {
public:
  bool judgesByteRuns() const override { return true; }
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty())
        return;
      if (isValidUtf8(pending))
        out.push_back(pending);
      else
        for (size_t k = 0; k < pending.size(); ++k)
          out.push_back("\xEF\xBF\xBD");
      pending.clear();
    };
    for (std::string &t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1; };
        int h = hex(t[3]), l = hex(t[4]);
        if (h >= 0 && l >= 0)
          byte = h * 16 + l;
      }
      if (byte >= 0) {
        pending += char(byte);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDec : public TokenDecoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string all;
    for (const std::string &t : tokens)
      all += t;
    tokens.assign(1, all);
  }
};

class StripDec : public TokenDecoder {
public:
  char32_t content = ' ';
  size_t start = 0, stop = 0;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &t : tokens) {
      std::vector<char32_t> cps = decodeUtf8(t);
      size_t b = 0, e = cps.size();
      for (size_t i = 0; i < start && i < cps.size() && cps[i] == content; ++i)
        b = i + 1;
      for (size_t i = 0; i < stop && i < cps.size() && cps[cps.size() - 1 - i] == content; ++i)
        e = cps.size() - 1 - i;
      t = b < e ? encodeUtf8(std::u32string(cps.begin() + b, cps.begin() + e)) : std::string();
    }
  }
};

class ReplaceDec : public TokenDecoder {
public:
  Regex pattern;
  std::string content;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &t : tokens) {
      std::string out;
      for (const Regex::Piece &p : pattern.findMatches(t))
        out += p.isMatch ? content : t.substr(p.begin, p.end - p.begin);
      t = std::move(out);
    }
  }
};

Status readCount(const json::Value &v, const char *key, size_t &out) {
  const json::Value *x = v.find(key);
  if (!x)
    return Status::ok();
  if (!x->isInteger() || x->asInt() < 0)
    return Status::error(std::string("decoder Strip: '") + key + "' must be a count");
  out = size_t(x->asInt());
  return Status::ok();
}

} // namespace

Status parseTokenDecoder(const json::Value &v, std::unique_ptr<TokenDecoder> &out) {
  out.reset();
  if (v.isNull())
    return Status::ok();
  std::string type = typeOf(v);
  if (type == "Sequence") {
    auto seq = std::make_unique<SequenceDec>();
    if (Status s = parseSteps(v, "decoders", parseTokenDecoder, seq->steps); !s)
      return s;
    out = std::move(seq);
  } else if (type == "ByteLevel") {
    out = std::make_unique<ByteLevelDec>();
  } else if (type == "Metaspace") {
    auto m = std::make_unique<MetaspaceDec>();
    m->replacement = "\xE2\x96\x81";
    if (Status s = parseMetaspaceDecoder(v, m->replacement, m->skipFirst); !s)
      return s;
    out = std::move(m);
  } else if (type == "ByteFallback") {
    out = std::make_unique<ByteFallbackDec>();
  } else if (type == "Fuse") {
    out = std::make_unique<FuseDec>();
  } else if (type == "Strip") {
    auto st = std::make_unique<StripDec>();
    std::string c = " ";
    if (Status s = optionalString(v, "content", c); !s)
      return s;
    std::vector<char32_t> cps = decodeUtf8(c);
    if (cps.size() != 1)
      return Status::error("decoder Strip: 'content' must be one character");
    st->content = cps[0];
    if (Status s = readCount(v, "start", st->start); !s)
      return s;
    if (Status s = readCount(v, "stop", st->stop); !s)
      return s;
    out = std::move(st);
  } else if (type == "Replace") {
    auto r = std::make_unique<ReplaceDec>();
    const json::Value *pat = v.find("pattern");
    if (!pat)
      return Status::error("decoder Replace: no 'pattern'");
    if (Status s = parsePattern(*pat, r->pattern); !s)
      return s;
    if (Status s = optionalString(v, "content", r->content); !s)
      return s;
    out = std::move(r);
  } else {
    return Status::error("decoder '" + type + "' is not supported");
  }
  return Status::ok();
}

} // namespace text
} // namespace genrt
