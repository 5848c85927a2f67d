// The model step of a tokenizer.json pipeline: one pre-tokenized piece to
// token ids (BPE, Unigram), and ids back to token strings.
#pragma once
#include "runtime/json/Json.h"
#include "runtime/Status.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace genrt {
namespace text {

class TokenModel {
public:
  virtual ~TokenModel() = default;
  /// Appends the ids of `piece`. Fails (naming the text) where Hugging Face
  /// would drop a character or fail: nothing in the vocabulary, no byte
  /// fallback, no unknown token.
  virtual Status tokenize(const std::string &piece, std::vector<int64_t> &ids) const = 0;
  /// The token string of `id`, or nullptr.
  const std::string *idToToken(int64_t id) const {
    auto it = idToToken_.find(id);
    return it == idToToken_.end() ? nullptr : &it->second;
  }
  /// The id of token string `token`, or -1.
  int64_t tokenToId(const std::string &token) const {
    auto it = vocab_.find(token);
    return it == vocab_.end() ? -1 : it->second;
  }
  /// One past the largest id.
  int64_t idLimit() const { return idLimit_; }

  /// For the model readers (parseBpe, parseUnigram).
  void addToken(const std::string &token, int64_t id) {
    vocab_[token] = id;
    idToToken_[id] = token;
    idLimit_ = std::max(idLimit_, id + 1);
  }

protected:
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<int64_t, std::string> idToToken_;
  int64_t idLimit_ = 0;
};

Status parseBpe(const json::Value &model, std::unique_ptr<TokenModel> &out);
Status parseUnigram(const json::Value &model, std::unique_ptr<TokenModel> &out);

} // namespace text
} // namespace genrt
