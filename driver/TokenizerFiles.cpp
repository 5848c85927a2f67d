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
// {"content": ...} objects (AddedToken), and may hold the chat templates.
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
  for (const char *key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    const llvm::json::Value *x = obj->get(key);
    if (!x)
      continue;
    if (auto s = x->getAsString())
      t.specialTokens[key] = s->str();
    else if (const auto *o = x->getAsObject(); o && o->getString("content"))
      t.specialTokens[key] = o->getString("content")->str();
  }
  // chat_template: a string, or transformers' list of {"name", "template"}.
  if (const llvm::json::Value *ct = obj->get("chat_template")) {
    if (auto str = ct->getAsString()) {
      t.chatTemplates[""] = str->str();
    } else if (const auto *list = ct->getAsArray()) {
      for (const llvm::json::Value &e : *list) {
        const auto *o = e.getAsObject();
        llvm::Optional<llvm::StringRef> name, text;
        if (o) {
          name = o->getString("name");
          text = o->getString("template");
        }
        if (!name || !text)
          return fail(path + ": chat_template: each entry needs a string 'name' and 'template'");
        t.chatTemplates[name->str()] = text->str();
      }
    } else if (!ct->getAsNull()) {
      return fail(path + ": chat_template must be a string or a list of named templates");
    }
  }
  return llvm::Error::success();
}

// transformers 4.43+ saves templates as files: chat_template.jinja (the
// default) and additional_chat_templates/NAME.jinja; they win over
// tokenizer_config.json's, as transformers' loading has them.
static llvm::Error readTemplateFiles(const std::string &dir, PlanTokenizer &t) {
  auto add = [&](const std::string &path, const std::string &name) -> llvm::Error {
    auto buf = readRegularFile(path);
    if (!buf)
      return fail("cannot read " + path + ": " + buf.getError().message());
    t.chatTemplates[name] = (*buf)->getBuffer().str();
    return llvm::Error::success();
  };
  std::error_code ec;
  std::string extra = join(dir, "additional_chat_templates");
  for (llvm::sys::fs::directory_iterator it(extra, ec), end; !ec && it != end; it.increment(ec)) {
    llvm::StringRef file = it->path();
    if (file.endswith(".jinja"))
      if (auto e = add(file.str(), llvm::sys::path::stem(file).str()))
        return e;
  }
  std::string main = join(dir, "chat_template.jinja");
  if (llvm::sys::fs::exists(main)) {
    const bool named = t.chatTemplates.size() > (t.chatTemplates.count("") ? 1u : 0u);
    t.chatTemplates.erase("");
    if (auto e = add(main, named ? "default" : ""))
      return e;
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
  if (auto e = readTemplateFiles(dir, t))
    return std::move(e);
  return std::optional<PlanTokenizer>(std::move(t));
}

} // namespace genc
