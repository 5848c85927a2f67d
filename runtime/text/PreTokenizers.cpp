// tokenizer.json pre-tokenizers: ByteLevel (GPT-2, Llama-3, Qwen), Split
// (the regex splits of Llama-3 / Qwen), Metaspace (Llama-2 / Mistral, T5),
// Digits, Whitespace, WhitespaceSplit and Sequence.
#include "runtime/text/Regex.h"
#include "runtime/text/TextSteps.h"
#include "runtime/text/Unicode.h"

#include <algorithm>
#include <cctype>

namespace genrt {
namespace text {

char32_t byteLevelChar(uint8_t b) {
  static const std::vector<char32_t> table = [] {
    std::vector<char32_t> t(256, 0);
    auto kept = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b)
      t[b] = kept(b) ? char32_t(b) : next++;
    return t;
  }();
  return table[b];
}

int byteLevelByte(char32_t c) {
  static const std::vector<int> table = [] {
    std::vector<int> t(512, -1);
    for (int b = 0; b < 256; ++b)
      t[byteLevelChar(uint8_t(b))] = b;
    return t;
  }();
  return c < 512 ? table[c] : -1;
}

namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// tokenizers' NormalizedString::split: turns match / non-match pieces into
// the kept sub-strings per the delimiter behavior.
void splitBy(const Split &in, std::vector<Regex::Piece> pieces, Behavior how, std::vector<Split> &out) {
  std::vector<std::pair<size_t, size_t>> kept;
  bool prevMatch = false;
  switch (how) {
  case Behavior::Isolated:
  case Behavior::Removed:
    for (const auto &p : pieces)
      if (!(how == Behavior::Removed && p.isMatch))
        kept.emplace_back(p.begin, p.end);
    break;
  case Behavior::Contiguous:
    for (const auto &p : pieces) {
      if (p.isMatch == prevMatch && !kept.empty())
        kept.back().second = p.end;
      else
        kept.emplace_back(p.begin, p.end);
      prevMatch = p.isMatch;
    }
    break;
  case Behavior::MergedWithPrevious:
    for (const auto &p : pieces) {
      if (p.isMatch && !prevMatch && !kept.empty())
        kept.back().second = p.end;
      else
        kept.emplace_back(p.begin, p.end);
      prevMatch = p.isMatch;
    }
    break;
  case Behavior::MergedWithNext:
    for (size_t k = pieces.size(); k-- > 0;) {
      const auto &p = pieces[k];
      if (p.isMatch && !prevMatch && !kept.empty())
        kept.back().first = p.begin;
      else
        kept.emplace_back(p.begin, p.end);
      prevMatch = p.isMatch;
    }
    std::reverse(kept.begin(), kept.end());
    break;
  }
  for (auto [b, e] : kept)
    if (e > b)
      out.push_back({in.text.substr(b, e - b), in.atOrigin && b == 0});
}

// Pieces for a code point predicate: runs of one character each that match.
std::vector<Regex::Piece> charMatches(const std::string &s, bool (*pred)(char32_t)) {
  std::vector<Regex::Piece> pieces;
  std::vector<size_t> off;
  std::vector<char32_t> cps = decodeUtf8(s, &off);
  size_t prev = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!pred(cps[i]))
      continue;
    if (prev < off[i])
      pieces.push_back({prev, off[i], false});
    pieces.push_back({off[i], off[i + 1], true});
    prev = off[i + 1];
  }
  if (prev < s.size() || pieces.empty())
    pieces.push_back({prev, s.size(), false});
  return pieces;
}

Status parseBehavior(const json::Value &v, Behavior &out) {
  std::string b;
  if (Status s = optionalString(v, "behavior", b); !s)
    return s;
  static const std::pair<const char *, Behavior> kNames[] = {
      {"Removed", Behavior::Removed}, {"Isolated", Behavior::Isolated},
      {"MergedWithPrevious", Behavior::MergedWithPrevious}, {"MergedWithNext", Behavior::MergedWithNext},
      {"Contiguous", Behavior::Contiguous}};
  for (const auto &[name, kind] : kNames) {
    std::string lower = name;
    for (char &c : lower)
      c = char(tolower(c));
    std::string bl = b;
    for (char &c : bl)
      c = char(tolower(c));
    // tokenizers writes "Isolated"; some exports write "isolated".
    if (bl == lower || (bl == "merged_with_previous" && kind == Behavior::MergedWithPrevious) ||
        (bl == "merged_with_next" && kind == Behavior::MergedWithNext)) {
      out = kind;
      return Status::ok();
    }
  }
  return Status::error("pre-tokenizer Split: unknown behavior '" + b + "'");
}

class SequencePre : public PreTokenizer {
public:
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  Status preTokenize(std::vector<Split> &splits) const override {
    for (const auto &p : steps)
      if (Status s = p->preTokenize(splits); !s)
        return s;
    return Status::ok();
  }
};

class ByteLevel : public PreTokenizer {
public:
  bool addPrefixSpace = false, useRegex = true;
  Status preTokenize(std::vector<Split> &splits) const override {
    static const Regex gpt2 = [] {
      Regex r;
      (void)Regex::compile(
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", r);
      return r;
    }();
    std::vector<Split> out;
    for (Split &sp : splits) {
      if (addPrefixSpace && (sp.text.empty() || sp.text[0] != ' '))
        sp.text.insert(0, " ");
      if (useRegex)
        splitBy(sp, gpt2.findMatches(sp.text), Behavior::Isolated, out);
      else if (!sp.text.empty())
        out.push_back(std::move(sp));
    }
    for (Split &sp : out) {
      std::string mapped;
      for (unsigned char b : sp.text)
        appendUtf8(mapped, byteLevelChar(b));
      sp.text = std::move(mapped);
    }
    splits = std::move(out);
    return Status::ok();
  }
};

class SplitPre : public PreTokenizer {
public:
  Regex pattern;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  Status preTokenize(std::vector<Split> &splits) const override {
    std::vector<Split> out;
    for (const Split &sp : splits) {
      std::vector<Regex::Piece> pieces = pattern.findMatches(sp.text);
      if (invert)
        for (auto &p : pieces)
          p.isMatch = !p.isMatch;
      splitBy(sp, std::move(pieces), behavior, out);
    }
    splits = std::move(out);
    return Status::ok();
  }
};

class CharSplitPre : public PreTokenizer {
public:
  bool (*pred)(char32_t) = nullptr;
  Behavior behavior = Behavior::Isolated;
  Status preTokenize(std::vector<Split> &splits) const override {
    std::vector<Split> out;
    for (const Split &sp : splits)
      splitBy(sp, charMatches(sp.text, pred), behavior, out);
    splits = std::move(out);
    return Status::ok();
  }
};

enum class Prepend { Always, First, Never };

class Metaspace : public PreTokenizer {
public:
  std::string replacement = "\xE2\x96\x81"; // U+2581
  Prepend prepend = Prepend::Always;
  bool split = true;
  Status preTokenize(std::vector<Split> &splits) const override {
    std::vector<Split> out;
    for (Split &sp : splits) {
      std::string r;
      for (char c : sp.text)
        r += c == ' ' ? replacement : std::string(1, c);
      bool starts = r.compare(0, replacement.size(), replacement) == 0;
      if (!starts && (prepend == Prepend::Always || (prepend == Prepend::First && sp.atOrigin)))
        r.insert(0, replacement);
      Split s2{std::move(r), sp.atOrigin};
      if (split)
        splitBy(s2, Regex::literal(replacement).findMatches(s2.text), Behavior::MergedWithNext, out);
      else if (!s2.text.empty())
        out.push_back(std::move(s2));
    }
    splits = std::move(out);
    return Status::ok();
  }
};

Status parseMetaspace(const json::Value &v, std::string &replacement, Prepend &prepend, bool *split) {
  if (Status s = optionalString(v, "replacement", replacement); !s)
    return s;
  std::string scheme = "always";
  if (Status s = optionalString(v, "prepend_scheme", scheme); !s)
    return s;
  if (scheme == "always")
    prepend = Prepend::Always;
  else if (scheme == "first")
    prepend = Prepend::First;
  else if (scheme == "never")
    prepend = Prepend::Never;
  else
    return Status::error("Metaspace: unknown prepend_scheme '" + scheme + "'");
  // Older files say add_prefix_space instead; false means never.
  if (const json::Value *aps = v.find("add_prefix_space"); aps && aps->isBool() && !aps->asBool())
    prepend = Prepend::Never;
  if (split)
    return optionalBool(v, "split", *split);
  return Status::ok();
}

} // namespace

Status parseMetaspaceDecoder(const json::Value &v, std::string &replacement, bool &skipFirst) {
  Prepend p = Prepend::Always;
  if (Status s = parseMetaspace(v, replacement, p, nullptr); !s)
    return s;
  skipFirst = p != Prepend::Never;
  return Status::ok();
}

Status parsePreTokenizer(const json::Value &v, std::unique_ptr<PreTokenizer> &out) {
  out.reset();
  if (v.isNull())
    return Status::ok();
  std::string type = typeOf(v);
  if (type == "Sequence") {
    auto seq = std::make_unique<SequencePre>();
    if (Status s = parseSteps(v, "pretokenizers", parsePreTokenizer, seq->steps); !s)
      return s;
    out = std::move(seq);
  } else if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevel>();
    if (Status s = optionalBool(v, "add_prefix_space", b->addPrefixSpace); !s)
      return s;
    if (Status s = optionalBool(v, "use_regex", b->useRegex); !s)
      return s;
    out = std::move(b);
  } else if (type == "Split") {
    auto sp = std::make_unique<SplitPre>();
    const json::Value *pat = v.find("pattern");
    if (!pat)
      return Status::error("pre-tokenizer Split: no 'pattern'");
    if (Status s = parsePattern(*pat, sp->pattern); !s)
      return s;
    if (Status s = parseBehavior(v, sp->behavior); !s)
      return s;
    if (Status s = optionalBool(v, "invert", sp->invert); !s)
      return s;
    out = std::move(sp);
  } else if (type == "Metaspace") {
    auto m = std::make_unique<Metaspace>();
    if (Status s = parseMetaspace(v, m->replacement, m->prepend, &m->split); !s)
      return s;
    out = std::move(m);
  } else if (type == "Digits") {
    auto d = std::make_unique<CharSplitPre>();
    bool individual = false;
    if (Status s = optionalBool(v, "individual_digits", individual); !s)
      return s;
    d->pred = isNumber;
    d->behavior = individual ? Behavior::Isolated : Behavior::Contiguous;
    out = std::move(d);
  } else if (type == "WhitespaceSplit") {
    auto d = std::make_unique<CharSplitPre>();
    d->pred = isWhiteSpace;
    d->behavior = Behavior::Removed;
    out = std::move(d);
  } else if (type == "Whitespace") {
    auto sp = std::make_unique<SplitPre>();
    if (Status s = Regex::compile("\\w+|[^\\w\\s]+", sp->pattern); !s)
      return s;
    sp->behavior = Behavior::Removed;
    sp->invert = true;
    out = std::move(sp);
  } else {
    return Status::error("pre-tokenizer '" + type + "' is not supported");
  }
  return Status::ok();
}

} // namespace text
} // namespace genrt
