// tokenizer.json as Hugging Face `tokenizers` runs it: added tokens are cut
// out first (those with normalized=false from the raw text, the others from
// each normalized piece), then each remaining piece is pre-tokenized and
// given to the model; the post-processor adds the template's special
// tokens. Decoding maps ids to token strings and runs the decoder chain.
#include "runtime/text/Tokenizer.h"

#include "runtime/json/Json.h"
#include "runtime/text/TextSteps.h"
#include "runtime/text/TokenModel.h"
#include "runtime/text/Unicode.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

namespace genrt {
namespace text {

namespace {

struct AddedToken {
  int64_t id = -1;
  std::string content; // as tokenizer.json has it: HF's get_vocab key, what stop strings see
  // HF's id_to_token: the content, normalized where `normalized` is set.
  // Encode looks for it, decode prints it.
  std::string text;
  bool singleWord = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

struct Piece {
  std::string text;
  int64_t addedId = -1; // an added token, or -1 for text still to tokenize
  bool atOrigin = false;
};

bool endsWithWord(const std::string &s) {
  std::vector<char32_t> c = decodeUtf8(s);
  return !c.empty() && isWordChar(c.back());
}
bool startsWithWord(const std::string &s) {
  std::vector<char32_t> c = decodeUtf8(s.substr(0, std::min<size_t>(4, s.size())));
  return !c.empty() && isWordChar(c.front());
}

} // namespace

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> preTokenizer;
  std::unique_ptr<TokenModel> model;
  std::unique_ptr<TokenDecoder> decoder;
  std::vector<int64_t> prefixIds, suffixIds; // the post-processor's, single sequence
  std::vector<AddedToken> added;
  std::unordered_map<int64_t, size_t> addedById;
  std::unordered_set<std::string> specialContents;

  // tokenizers' AddedVocabulary::find_matches over one set of added tokens
  // (leftmost-longest, then single_word / lstrip / rstrip).
  void cutAdded(const Piece &in, bool normalizedSet, std::vector<Piece> &out) const {
    const std::string &s = in.text;
    size_t startOffset = 0;
    auto emitText = [&](size_t b, size_t e) {
      if (e > b)
        out.push_back({s.substr(b, e - b), -1, in.atOrigin && b == 0});
    };
    for (size_t pos = 0; pos < s.size();) {
      const AddedToken *best = nullptr;
      for (const AddedToken &t : added)
        if (t.normalized == normalizedSet && !t.text.empty() && s.compare(pos, t.text.size(), t.text) == 0 &&
            (!best || t.text.size() > best->text.size()))
          best = &t;
      if (!best) {
        pos += std::min(utf8Length(static_cast<unsigned char>(s[pos])), s.size() - pos);
        continue;
      }
      size_t start = pos, stop = pos + best->text.size();
      pos = stop;
      if (best->singleWord) {
        bool startSpace = start == 0 || !endsWithWord(s.substr(0, start));
        bool stopSpace = stop == s.size() || !startsWithWord(s.substr(stop));
        if (!startSpace || !stopSpace)
          continue;
      }
      if (best->lstrip) {
        std::vector<size_t> off;
        std::vector<char32_t> cps = decodeUtf8(s.substr(0, start), &off);
        size_t k = cps.size();
        while (k > 0 && isWhiteSpace(cps[k - 1]))
          --k;
        start = std::max(off[k], startOffset);
      }
      if (best->rstrip) {
        std::vector<size_t> off;
        std::vector<char32_t> cps = decodeUtf8(s.substr(stop), &off);
        size_t k = 0;
        while (k < cps.size() && isWhiteSpace(cps[k]))
          ++k;
        stop += off[k];
      }
      emitText(startOffset, start);
      out.push_back({s.substr(start, stop - start), best->id, false});
      startOffset = stop;
    }
    emitText(startOffset, s.size());
  }

  Status encode(const std::string &text, bool addSpecial, std::vector<int64_t> &ids) const {
    std::vector<Piece> raw, pieces;
    cutAdded(Piece{text, -1, true}, false, raw);
    for (Piece &p : raw) {
      if (p.addedId >= 0) {
        pieces.push_back(std::move(p));
        continue;
      }
      if (normalizer)
        normalizer->normalize(p.text);
      cutAdded(p, true, pieces);
    }
    for (const Piece &p : pieces) {
      if (p.addedId >= 0) {
        ids.push_back(p.addedId);
        continue;
      }
      std::vector<Split> splits{{p.text, p.atOrigin}};
      if (preTokenizer)
        if (Status s = preTokenizer->preTokenize(splits); !s)
          return s;
      for (const Split &sp : splits)
        if (Status s = model->tokenize(sp.text, ids); !s)
          return s;
    }
    if (addSpecial) {
      ids.insert(ids.begin(), prefixIds.begin(), prefixIds.end());
      ids.insert(ids.end(), suffixIds.begin(), suffixIds.end());
    }
    return Status::ok();
  }

  std::string decode(const std::vector<int64_t> &ids, bool skipSpecial) const {
    std::vector<std::string> tokens;
    for (int64_t id : ids) {
      const std::string *t = nullptr;
      if (auto it = addedById.find(id); it != addedById.end())
        t = &added[it->second].text;
      else
        t = model->idToToken(id);
      if (!t || (skipSpecial && specialContents.count(*t)))
        continue;
      tokens.push_back(*t);
    }
    return decodeTokens(std::move(tokens));
  }

  std::string decodeTokens(std::vector<std::string> tokens) const {
    if (!decoder) {
      std::string out;
      for (size_t i = 0; i < tokens.size(); ++i)
        out += (i ? " " : "") + tokens[i];
      return out;
    }
    decoder->decodeChain(tokens);
    std::string out;
    for (const std::string &t : tokens)
      out += t;
    return out;
  }

  Status readAdded(const json::Value &list) {
    if (list.isNull())
      return Status::ok();
    if (!list.isArray())
      return Status::error("'added_tokens' must be a list");
    for (const json::Value &t : list.items()) {
      AddedToken a;
      const json::Value *id = t.isObject() ? t.find("id") : nullptr;
      if (!id || !id->isInteger() || id->asInt() < 0 || id->asInt() > INT32_MAX)
        return Status::error("an added token has no valid 'id'");
      a.id = id->asInt();
      Status s = Status::ok();
      if (!(s = optionalString(t, "content", a.content)) || !(s = optionalBool(t, "single_word", a.singleWord)) ||
          !(s = optionalBool(t, "lstrip", a.lstrip)) || !(s = optionalBool(t, "rstrip", a.rstrip)) ||
          !(s = optionalBool(t, "normalized", a.normalized)) || !(s = optionalBool(t, "special", a.special)))
        return Status::error("added token " + std::to_string(a.id) + ": " + s.message());
      if (!isValidUtf8(a.content))
        return Status::error("added token " + std::to_string(a.id) + " is not valid UTF-8");
      a.text = a.content;
      if (a.normalized && normalizer)
        normalizer->normalize(a.text);
      // HF skips by the content: a special token that normalization
      // changes is decoded, skip_special_tokens or not (tokenizers 0.23).
      if (a.special)
        specialContents.insert(a.content);
      addedById[a.id] = added.size();
      added.push_back(std::move(a));
    }
    return Status::ok();
  }

  Status readPostProcessor(const json::Value &v) {
    if (v.isNull())
      return Status::ok();
    std::string type = typeOf(v);
    if (type == "Sequence") {
      const json::Value *list = v.find("processors");
      if (!list || !list->isArray())
        return Status::error("post-processor Sequence: no 'processors' list");
      for (const json::Value &p : list->items())
        if (Status s = readPostProcessor(p); !s)
          return s;
      return Status::ok();
    }
    if (type == "ByteLevel")
      return Status::ok(); // offsets only
    if (type == "RobertaProcessing" || type == "BertProcessing") {
      const json::Value *cls = v.find("cls"), *sep = v.find("sep");
      auto idOf = [](const json::Value *p, int64_t &id) {
        if (!p || !p->isArray() || p->items().size() != 2 || !p->items()[1].isInteger())
          return false;
        id = p->items()[1].asInt();
        return true;
      };
      int64_t c, s;
      if (!idOf(cls, c) || !idOf(sep, s))
        return Status::error("post-processor " + type + ": bad 'cls' / 'sep'");
      prefixIds.push_back(c);
      suffixIds.push_back(s);
      return Status::ok();
    }
    if (type != "TemplateProcessing")
      return Status::error("post-processor '" + type + "' is not supported");
    const json::Value *single = v.find("single"), *specials = v.find("special_tokens");
    if (!single || !single->isArray())
      return Status::error("post-processor TemplateProcessing: no 'single' template");
    bool seenSequence = false;
    for (const json::Value &item : single->items()) {
      if (!item.isObject() || item.members().size() != 1)
        return Status::error("post-processor TemplateProcessing: a bad template piece");
      const auto &[kind, body] = item.members()[0];
      if (kind == "Sequence") {
        seenSequence = true;
        continue;
      }
      const json::Value *name = body.isObject() ? body.find("id") : nullptr;
      const json::Value *tok = specials && specials->isObject() && name && name->isString()
                                   ? specials->find(name->asString())
                                   : nullptr;
      const json::Value *tids = tok && tok->isObject() ? tok->find("ids") : nullptr;
      if (kind != "SpecialToken" || !tids || !tids->isArray())
        return Status::error("post-processor TemplateProcessing: a special token without ids");
      for (const json::Value &i : tids->items()) {
        if (!i.isInteger() || i.asInt() < 0)
          return Status::error("post-processor TemplateProcessing: a bad special token id");
        (seenSequence ? suffixIds : prefixIds).push_back(i.asInt());
      }
    }
    return Status::ok();
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Status Tokenizer::fromJson(const std::string &text, std::unique_ptr<Tokenizer> &out) {
  json::Value root;
  if (Status s = json::parse(text, root); !s)
    return Status::error("tokenizer.json: " + s.message());
  if (!root.isObject())
    return Status::error("tokenizer.json: not a JSON object");
  auto impl = std::make_unique<Impl>();
  static const json::Value kNull;
  auto member = [&](const char *k) -> const json::Value & {
    const json::Value *v = root.find(k);
    return v ? *v : kNull;
  };
  auto fail = [](const Status &s) { return Status::error("tokenizer.json: " + s.message()); };
  Status s = Status::ok();
  if (!(s = parseNormalizer(member("normalizer"), impl->normalizer)) ||
      !(s = parsePreTokenizer(member("pre_tokenizer"), impl->preTokenizer)) ||
      !(s = parseTokenDecoder(member("decoder"), impl->decoder)) ||
      !(s = impl->readPostProcessor(member("post_processor"))) || !(s = impl->readAdded(member("added_tokens"))))
    return fail(s);
  const json::Value &model = member("model");
  std::string type = typeOf(model);
  if (type.empty() && model.isObject() && model.find("merges"))
    type = "BPE"; // older files leave the model's type out
  if (type == "BPE")
    s = parseBpe(model, impl->model);
  else if (type == "Unigram")
    s = parseUnigram(model, impl->model);
  else
    s = Status::error("model '" + type + "' is not supported (BPE and Unigram are)");
  if (!s)
    return fail(s);
  for (const std::vector<int64_t> *list : {&impl->prefixIds, &impl->suffixIds})
    for (int64_t id : *list)
      if (!impl->addedById.count(id) && !impl->model->idToToken(id))
        return fail(Status::error("the post-processor adds id " + std::to_string(id) + ", which has no token"));
  out.reset(new Tokenizer(std::move(impl)));
  return Status::ok();
}

Status Tokenizer::encode(const std::string &text, bool addSpecialTokens, std::vector<int64_t> &ids) const {
  ids.clear();
  if (size_t bad; !isValidUtf8(text, &bad))
    return Status::error("the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  return impl_->encode(text, addSpecialTokens, ids);
}

std::string Tokenizer::decode(const std::vector<int64_t> &ids, bool skipSpecialTokens) const {
  return impl_->decode(ids, skipSpecialTokens);
}

bool Tokenizer::continuesByteRun(int64_t id) const {
  if (!impl_->decoder || !impl_->decoder->judgesByteRuns() || impl_->addedById.count(id))
    return false;
  const std::string *t = impl_->model->idToToken(id);
  return t && t->size() == 6 && t->compare(0, 3, "<0x") == 0 && (*t)[5] == '>';
}

std::string Tokenizer::stopStringText(int64_t id) const {
  const Impl &m = *impl_;
  const std::string *t = nullptr;
  // transformers reads the vocabulary (get_vocab), whose added tokens are
  // their content, not id_to_token's normalized text.
  if (auto it = m.addedById.find(id); it != m.addedById.end())
    t = &m.added[it->second].content;
  else
    t = m.model->idToToken(id);
  if (!t)
    return "";
  if (m.decoder && m.decoder->judgesByteRuns()) {
    // HF prefers ByteFallback when a chain has both.
    if (t->size() == 6 && t->compare(0, 3, "<0x") == 0 && (*t)[5] == '>' && isxdigit((unsigned char)(*t)[3]) &&
        isxdigit((unsigned char)(*t)[4]))
      return std::string(1, char(std::stoi(t->substr(3, 2), nullptr, 16)));
  } else if (m.decoder && m.decoder->isByteLevel()) {
    std::string bytes;
    bool all = true;
    for (char32_t c : decodeUtf8(*t)) {
      const int b = byteLevelByte(c);
      if (b < 0) {
        all = false;
        break;
      }
      bytes += char(b);
    }
    if (all)
      return bytes;
  }
  static const std::string kPrefix = "abcdef"; // HF's static_prefix
  std::vector<int64_t> ids;
  if (!m.encode(kPrefix, /*addSpecial=*/false, ids))
    ids.clear();
  std::vector<std::string> tokens;
  for (int64_t i : ids) {
    auto it = m.addedById.find(i);
    const std::string *p = it != m.addedById.end() ? &m.added[it->second].text : m.model->idToToken(i);
    if (p)
      tokens.push_back(*p);
  }
  tokens.push_back(*t);
  const std::string s = m.decodeTokens(tokens);
  const size_t at = s.find(kPrefix);
  return at == std::string::npos ? m.decodeTokens({*t}) : s.substr(at + kPrefix.size());
}

int64_t Tokenizer::idLimit() const {
  int64_t n = impl_->model->idLimit();
  for (const AddedToken &a : impl_->added)
    n = std::max(n, a.id + 1);
  return n;
}

} // namespace text
} // namespace genrt
