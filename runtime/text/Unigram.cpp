// The Unigram model of tokenizer.json (T5 and other SentencePiece unigram
// tokenizers): the Viterbi best segmentation over the vocabulary, unknown
// characters scored min_score - 10 and fused, then byte fallback, exactly as
// tokenizers' Unigram::encode_optimized and tokenize do it.
#include "runtime/text/TokenModel.h"
#include "runtime/text/Unicode.h"

#include <cmath>

namespace genrt {
namespace text {
namespace {

constexpr double kUnkPenalty = 10.0;

class Unigram : public TokenModel {
public:
  std::vector<double> scores;  // by id
  int64_t unkId = -1;
  bool byteFallback = false;
  double minScore = INFINITY;
  // A byte trie over the vocabulary: edge (node << 8 | byte) -> child, and
  // the id ending at a node (-1 where none). Node 0 is the root.
  std::unordered_map<uint64_t, int32_t> edges;
  std::vector<int64_t> terminal{-1};

  void insert(const std::string &tok, int64_t id) {
    uint64_t node = 0;
    for (unsigned char c : tok) {
      auto [it, fresh] = edges.emplace((node << 8) | c, int32_t(terminal.size()));
      if (fresh)
        terminal.push_back(-1);
      node = uint64_t(it->second);
    }
    terminal[node] = id;
  }

  Status tokenize(const std::string &s, std::vector<int64_t> &ids) const override {
    if (s.empty())
      return Status::ok();
    struct Best {
      int64_t id = 0;
      double score = 0;
      int64_t from = -1; // start of the best path's last token; -1: unreached
    };
    size_t n = s.size();
    std::vector<Best> best(n + 1);
    double unkScore = minScore - kUnkPenalty;
    for (size_t at = 0; at < n;) {
      double here = best[at].score;
      size_t charLen = std::min(utf8Length(static_cast<unsigned char>(s[at])), n - at);
      bool single = false;
      uint64_t node = 0;
      for (size_t k = at; k < n; ++k) {
        auto it = edges.find((node << 8) | static_cast<unsigned char>(s[k]));
        if (it == edges.end())
          break;
        node = uint64_t(it->second);
        int64_t id = terminal[node];
        if (id < 0)
          continue;
        // The id a token string maps to (the last one listed, as tokenizers'
        // token_to_ids keeps) carries the score.
        int64_t tid = tokenToId(s.substr(at, k + 1 - at));
        Best &b = best[k + 1];
        double cand = scores[size_t(tid)] + here;
        if (b.from < 0 || cand > b.score)
          b = {tid, cand, int64_t(at)};
        single = single || k + 1 - at == charLen;
      }
      if (!single) {
        if (unkId < 0)
          return Status::error("the tokenizer cannot encode '" + s.substr(at, charLen) +
                               "' (not in its vocabulary, no unknown token)");
        Best &b = best[at + charLen];
        double cand = unkScore + here;
        if (b.from < 0 || cand > b.score)
          b = {unkId, cand, int64_t(at)};
      }
      at += charLen;
    }
    // Walk back; runs of unknown pieces fuse into one string.
    std::vector<std::string> pieces;
    std::string unkRun;
    for (size_t end = n; end > 0;) {
      const Best &b = best[end];
      size_t from = size_t(b.from);
      std::string piece = s.substr(from, end - from);
      if (b.id == unkId) {
        unkRun.insert(0, piece);
      } else {
        if (!unkRun.empty())
          pieces.push_back(std::move(unkRun));
        unkRun.clear();
        pieces.push_back(std::move(piece));
      }
      end = from;
    }
    if (!unkRun.empty())
      pieces.push_back(std::move(unkRun));
    for (size_t k = pieces.size(); k-- > 0;) {
      const std::string &p = pieces[k];
      if (int64_t id = tokenToId(p); id >= 0) {
        ids.push_back(id);
        continue;
      }
      if (byteFallback) {
        std::vector<int64_t> bytes;
        for (unsigned char c : p) {
          char name[8];
          snprintf(name, sizeof name, "<0x%02X>", c);
          int64_t id = tokenToId(name);
          if (id < 0)
            break;
          bytes.push_back(id);
        }
        if (bytes.size() == p.size()) {
          ids.insert(ids.end(), bytes.begin(), bytes.end());
          continue;
        }
      }
      ids.push_back(unkId);
    }
    return Status::ok();
  }
};

} // namespace

Status parseUnigram(const json::Value &v, std::unique_ptr<TokenModel> &out) {
  auto u = std::make_unique<Unigram>();
  const json::Value *vocab = v.find("vocab");
  if (!vocab || !vocab->isArray() || vocab->items().empty())
    return Status::error("Unigram model: 'vocab' must be a non-empty list");
  int64_t id = 0;
  for (const json::Value &e : vocab->items()) {
    if (!e.isArray() || e.items().size() != 2 || !e.items()[0].isString() || !e.items()[1].isNumber())
      return Status::error("Unigram model: a vocabulary entry must be [token, score]");
    const std::string &tok = e.items()[0].asString();
    double score = e.items()[1].asDouble();
    u->addToken(tok, id);
    u->scores.push_back(score);
    u->minScore = std::min(u->minScore, score);
    u->insert(tok, id);
    ++id;
  }
  if (const json::Value *unk = v.find("unk_id"); unk && !unk->isNull()) {
    if (!unk->isInteger() || unk->asInt() < 0 || unk->asInt() >= id)
      return Status::error("Unigram model: 'unk_id' is outside the vocabulary");
    u->unkId = unk->asInt();
  }
  if (const json::Value *bf = v.find("byte_fallback"); bf && bf->isBool())
    u->byteFallback = bf->asBool();
  out = std::move(u);
  return Status::ok();
}

} // namespace text
} // namespace genrt
