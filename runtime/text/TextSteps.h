// The steps of a tokenizer.json pipeline, as Hugging Face `tokenizers` runs
// them: normalizer -> pre-tokenizer -> model -> post-processor to encode,
// decoder to decode. Each is read from its JSON object; a type or option
// this runtime does not implement is a load error naming it, never a
// silent difference from Hugging Face.
#pragma once
#include "runtime/json/Json.h"
#include "runtime/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace genrt {
namespace text {

class Normalizer {
public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string &s) const = 0;
};

/// A piece of text between pre-tokenization steps. `atOrigin`: it starts at
/// offset 0 of the original input (Metaspace's prepend_scheme "first").
struct Split {
  std::string text;
  bool atOrigin = false;
};

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Replaces `splits` by their sub-splits; empty ones are dropped, as
  /// tokenizers drops them after every step.
  virtual Status preTokenize(std::vector<Split> &splits) const = 0;
};

/// tokenizers' Decoder::decode_chain: token strings in, strings out; the
/// decoded text is their concatenation.
class TokenDecoder {
public:
  virtual ~TokenDecoder() = default;
  virtual void decodeChain(std::vector<std::string> &tokens) const = 0;
  /// True for ByteFallback (and chains holding it): it renders a run of
  /// <0xXX> tokens as a whole, so a later byte can change earlier text.
  virtual bool judgesByteRuns() const { return false; }
  /// True for ByteLevel (and chains holding it).
  virtual bool isByteLevel() const { return false; }
};

/// `v` null gives a null step (the pipeline skips it).
Status parseNormalizer(const json::Value &v, std::unique_ptr<Normalizer> &out);
Status parsePreTokenizer(const json::Value &v, std::unique_ptr<PreTokenizer> &out);
Status parseTokenDecoder(const json::Value &v, std::unique_ptr<TokenDecoder> &out);

/// Helpers the step parsers share.
const char *typeOf(const json::Value &v); // the "type" member, or ""
Status optionalBool(const json::Value &v, const char *key, bool &out);
Status optionalString(const json::Value &v, const char *key, std::string &out);
/// The steps of a Sequence (`key`: "normalizers", "pretokenizers",
/// "decoders"), each read by `parse`; null steps are left out.
template <class Step>
Status parseSteps(const json::Value &v, const char *key, Status (*parse)(const json::Value &, std::unique_ptr<Step> &),
                  std::vector<std::unique_ptr<Step>> &out) {
  const json::Value *list = v.find(key);
  if (!list || !list->isArray())
    return Status::error(std::string("Sequence: no '") + key + "' list");
  for (const json::Value &item : list->items()) {
    std::unique_ptr<Step> step;
    if (Status s = parse(item, step); !s)
      return s;
    if (step)
      out.push_back(std::move(step));
  }
  return Status::ok();
}

/// A "pattern" object: {"String": s} or {"Regex": r}.
class Regex;
Status parsePattern(const json::Value &v, Regex &out);

} // namespace text
} // namespace genrt

namespace genrt {
namespace text {

/// GPT-2's byte-to-character alphabet (ByteLevel): the character standing
/// for byte b, and the byte a character stands for (-1 for other characters).
char32_t byteLevelChar(uint8_t b);
int byteLevelByte(char32_t c);

/// Metaspace read as a decoder: its replacement, and whether the first
/// token's leading replacement is dropped (prepend_scheme other than never).
Status parseMetaspaceDecoder(const json::Value &v, std::string &replacement, bool &skipFirst);

} // namespace text
} // namespace genrt
