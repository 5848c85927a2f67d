#include "driver/TokenizerFiles.h"
#include "compiler/ir/ReadFile.h"

#include "runtime/text/Tokenizer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace genc {

static llvm::Error fail(const std::string &m) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", m.c_str());
}

static std::string join(const std::string &dir, const char *name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return p.str().str();
}

// tokenizer_config.json names its special tokens as strings or as
// {"content": ...} objects (AddedToken).
static llvm::Error readSpecialTokens(const std::string &path, PlanTokenizer &t) {
  auto buf = readRegularFile(path);
  if (!buf)
    return llvm::Error::success();
  auto v = llvm::json::parse((*buf)->getBuffer());
  if (!v)
    return fail(path + ": " + llvm::toString(v.takeError()));
  const auto *obj = v->getAsObject();
  if (!obj)
    return fail(path + ": not a JSON object");
  for (const char *key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    const llvm::json::Value *x = obj->get(key);
    if (!x)
      continue;
    if (auto s = x->getAsString())
      t.specialTokens[key] = s->str();
    else if (const auto *o = x->getAsObject(); o && o->getString("content"))
      t.specialTokens[key] = o->getString("content")->str();
  }
  return llvm::Error::success();
}

llvm::Expected<std::optional<PlanTokenizer>> findTokenizer(const std::string &dir) {
  std::string path = join(dir, "tokenizer.json");
  if (!llvm::sys::fs::exists(path)) {
    for (const char *spm : {"tokenizer.model", "spiece.model", "source.spm"})
      if (llvm::sys::fs::exists(join(dir, spm)))
        return fail(join(dir, spm) + ": SentencePiece models are not packed yet; save a tokenizer.json "
                                     "beside it (transformers' tokenizer.save_pretrained writes one) or "
                                     "pass --no-tokenizer");
    return std::nullopt;
  }
  auto buf = readRegularFile(path);
  if (!buf)
    return fail("cannot read " + path + ": " + buf.getError().message());
  PlanTokenizer t;
  t.json = (*buf)->getBuffer().str();
  t.source = "tokenizer.json";
  std::unique_ptr<genrt::text::Tokenizer> tok;
  if (genrt::Status s = genrt::text::Tokenizer::fromJson(t.json, tok); !s)
    return fail(path + ": " + s.message() + " (pass --no-tokenizer to compile without it)");
  t.idLimit = tok->idLimit();
  if (auto e = readSpecialTokens(join(dir, "tokenizer_config.json"), t))
    return std::move(e);
  return std::optional<PlanTokenizer>(std::move(t));
}

} // namespace genc
