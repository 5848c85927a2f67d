// The BPE model of tokenizer.json (GPT-2, Llama-2/3, Mistral, Qwen): merges
// applied lowest rank first, leftmost first among equal ranks, exactly as
// tokenizers' Word::merge_all does it (including its stale-entry checks).
#include "runtime/text/TextSteps.h"
#include "runtime/text/TokenModel.h"
#include "runtime/text/Unicode.h"

#include <queue>

namespace genrt {
namespace text {
namespace {

struct Symbol {
  int64_t id;
  int64_t prev, next;
  size_t len; // bytes; 0 once merged away
};

struct Merge {
  size_t pos;
  uint32_t rank;
  int64_t newId;
  // std::priority_queue pops the largest: make the lowest rank, then the
  // lowest position, the largest.
  bool operator<(const Merge &o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

class Bpe : public TokenModel {
public:
  std::string unkToken, prefix, suffix;
  bool fuseUnk = false, byteFallback = false, ignoreMerges = false;
  std::unordered_map<uint64_t, std::pair<uint32_t, int64_t>> merges; // (a, b) -> (rank, merged id)
  int64_t byteIds[256];

  static uint64_t key(int64_t a, int64_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  Status tokenize(const std::string &w, std::vector<int64_t> &ids) const override {
    if (w.empty())
      return Status::ok();
    if (ignoreMerges)
      if (int64_t id = tokenToId(w); id >= 0) {
        ids.push_back(id);
        return Status::ok();
      }
    std::vector<Symbol> syms;
    auto add = [&](int64_t id, size_t len) {
      int64_t n = int64_t(syms.size());
      syms.push_back({id, n - 1, -1, len});
      if (n > 0)
        syms[n - 1].next = n;
    };
    int64_t unkId = -1;
    size_t unkLen = 0;
    bool haveUnk = false;
    for (size_t i = 0; i < w.size();) {
      size_t n = std::min(utf8Length(static_cast<unsigned char>(w[i])), w.size() - i);
      bool first = i == 0, last = i + n == w.size();
      std::string s = w.substr(i, n);
      if (!first)
        s = prefix + s;
      if (last)
        s += suffix;
      i += n;
      if (int64_t id = tokenToId(s); id >= 0) {
        if (haveUnk) {
          add(unkId, unkLen);
          haveUnk = false;
        }
        add(id, n);
        continue;
      }
      if (byteFallback) {
        bool all = true;
        for (unsigned char b : s)
          all = all && byteIds[b] >= 0;
        if (all) {
          for (unsigned char b : s)
            add(byteIds[b], 1);
          continue;
        }
      }
      int64_t unk = unkToken.empty() ? -1 : tokenToId(unkToken);
      if (unk < 0)
        return Status::error("the tokenizer cannot encode '" + w.substr(i - n, n) +
                             "' (not in its vocabulary, no byte fallback, no unknown token)");
      if (haveUnk && fuseUnk) {
        unkLen += n;
      } else {
        if (haveUnk)
          add(unkId, unkLen);
        unkId = unk;
        unkLen = n;
        haveUnk = true;
      }
    }
    if (haveUnk)
      add(unkId, unkLen);
    mergeAll(syms);
    for (const Symbol &s : syms)
      if (s.len)
        ids.push_back(s.id);
    return Status::ok();
  }

private:
  const std::pair<uint32_t, int64_t> *find(int64_t a, int64_t b) const {
    auto it = merges.find(key(a, b));
    return it == merges.end() ? nullptr : &it->second;
  }

  void mergeAll(std::vector<Symbol> &syms) const {
    std::priority_queue<Merge> queue;
    for (size_t i = 0; i + 1 < syms.size(); ++i)
      if (auto m = find(syms[i].id, syms[i + 1].id))
        queue.push({i, m->first, m->second});
    while (!queue.empty()) {
      Merge top = queue.top();
      queue.pop();
      Symbol &cur = syms[top.pos];
      if (cur.len == 0 || cur.next == -1)
        continue;
      size_t nextPos = size_t(cur.next);
      Symbol right = syms[nextPos];
      auto m = find(cur.id, right.id);
      if (!m || m->second != top.newId)
        continue; // a stale entry
      cur.id = top.newId;
      cur.len += right.len;
      cur.next = right.next;
      syms[nextPos].len = 0;
      if (right.next >= 0 && size_t(right.next) < syms.size())
        syms[size_t(right.next)].prev = int64_t(top.pos);
      if (cur.prev >= 0)
        if (auto p = find(syms[size_t(cur.prev)].id, cur.id))
          queue.push({size_t(cur.prev), p->first, p->second});
      if (cur.next >= 0 && size_t(cur.next) < syms.size())
        if (auto p = find(cur.id, syms[size_t(cur.next)].id))
          queue.push({top.pos, p->first, p->second});
    }
  }
};

} // namespace

Status parseBpe(const json::Value &v, std::unique_ptr<TokenModel> &out) {
  auto bpe = std::make_unique<Bpe>();
  const json::Value *vocab = v.find("vocab"), *merges = v.find("merges");
  if (!vocab || !vocab->isObject())
    return Status::error("BPE model: 'vocab' must be an object");
  for (const auto &[tok, id] : vocab->members()) {
    if (!id.isInteger() || id.asInt() < 0 || id.asInt() > INT32_MAX)
      return Status::error("BPE model: the id of '" + tok + "' is not a valid id");
    bpe->addToken(tok, id.asInt());
  }
  Status s = Status::ok();
  if (!(s = optionalString(v, "unk_token", bpe->unkToken)) ||
      !(s = optionalString(v, "continuing_subword_prefix", bpe->prefix)) ||
      !(s = optionalString(v, "end_of_word_suffix", bpe->suffix)) || !(s = optionalBool(v, "fuse_unk", bpe->fuseUnk)) ||
      !(s = optionalBool(v, "byte_fallback", bpe->byteFallback)) ||
      !(s = optionalBool(v, "ignore_merges", bpe->ignoreMerges)))
    return Status::error("BPE model: " + s.message());
  if (const json::Value *d = v.find("dropout"); d && !d->isNull() && !(d->isNumber() && d->asDouble() == 0))
    return Status::error("BPE model: dropout is not supported (generation encodes deterministically)");
  for (int b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    bpe->byteIds[b] = bpe->tokenToId(name);
  }
  if (!merges || !merges->isArray())
    return Status::error("BPE model: 'merges' must be a list");
  uint32_t rank = 0;
  for (const json::Value &m : merges->items()) {
    std::string a, b;
    if (m.isString()) { // "a b" (older files)
      size_t sp = m.asString().find(' ');
      if (sp == std::string::npos)
        return Status::error("BPE model: merge '" + m.asString() + "' is not two tokens");
      a = m.asString().substr(0, sp);
      b = m.asString().substr(sp + 1);
    } else if (m.isArray() && m.items().size() == 2 && m.items()[0].isString() && m.items()[1].isString()) {
      a = m.items()[0].asString();
      b = m.items()[1].asString();
    } else {
      return Status::error("BPE model: a merge must be \"a b\" or [a, b]");
    }
    int64_t ia = bpe->tokenToId(a), ib = bpe->tokenToId(b);
    std::string joined = a + (b.compare(0, bpe->prefix.size(), bpe->prefix) == 0 ? b.substr(bpe->prefix.size()) : b);
    int64_t merged = bpe->tokenToId(joined);
    if (ia < 0 || ib < 0 || merged < 0)
      return Status::error("BPE model: merge '" + a + " " + b + "' uses a token outside the vocabulary");
    // A repeated merge takes its last rank, as tokenizers builds its map.
    bpe->merges[Bpe::key(ia, ib)] = std::make_pair(rank++, merged);
  }
  out = std::move(bpe);
  return Status::ok();
}

} // namespace text
} // namespace genrt
