// Text to token ids and back, from a Hugging Face tokenizer.json: what a
// plan carries so that genrun (and later the Python package) speak text.
// Encoding and decoding give exactly the ids and text that Hugging Face
// `tokenizers` gives for the families served (byte-level BPE as GPT-2 /
// Llama-3 / Qwen, Metaspace BPE with byte fallback as Llama-2 / Mistral,
// Unigram as T5); tests/text verifies that on generated corpora.
#pragma once
#include "runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace genrt {
namespace text {

class Tokenizer {
public:
  ~Tokenizer();

  /// Reads tokenizer.json text. Errors name the unsupported or malformed part.
  static Status fromJson(const std::string &json, std::unique_ptr<Tokenizer> &out);

  /// Hugging Face's tokenizer.encode(text, add_special_tokens=...).ids.
  /// `text` must be valid UTF-8 (callers check: a JSON string always is).
  Status encode(const std::string &text, bool addSpecialTokens, std::vector<int64_t> &ids) const;

  /// Hugging Face's tokenizer.decode(ids, skip_special_tokens=...): ids
  /// with no token are left out, as there.
  std::string decode(const std::vector<int64_t> &ids, bool skipSpecialTokens) const;

  /// One past the largest id the tokenizer knows (vocabulary and added tokens).
  int64_t idLimit() const;

  /// True when `id` is a byte token (<0xXX>) whose rendering depends on the
  /// byte tokens after it (a ByteFallback decoder): a stream waits for the
  /// end of the run.
  bool continuesByteRun(int64_t id) const;

  /// The text token `id` stands for as transformers 5.23's StopStringCriteria
  /// reads it (clean_tokenizer_vocab): under a ByteLevel decoder the raw
  /// bytes of a token in its alphabet, partial characters included; under
  /// ByteFallback a <0xXX> token's byte; otherwise the text the token adds
  /// after "abcdef" (decode(ids("abcdef") + [id]) from just past "abcdef").
  std::string stopStringText(int64_t id) const;

  struct Impl;

private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Incremental detokenization for streaming: feed ids as they are
/// generated; each call returns the text that has become final. It never
/// returns part of a character (a byte-level or byte-fallback token that
/// ends inside a UTF-8 sequence is held back until the sequence completes),
/// and the concatenation of everything returned, finish() included, equals
/// tokenizer.decode(all ids).
class StreamDecoder {
public:
  StreamDecoder(const Tokenizer &tok, bool skipSpecialTokens) : tok_(tok), skip_(skipSpecialTokens) {}
  std::string push(int64_t id);
  std::string finish();

private:
  const Tokenizer &tok_;
  bool skip_;
  std::vector<int64_t> ids_;
  std::string emitted_; // text returned so far
};

} // namespace text
} // namespace genrt
