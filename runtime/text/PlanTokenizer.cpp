#include "runtime/text/PlanTokenizer.h"

#include "runtime/Json.h"
#include "runtime/PlanHeader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sys/stat.h>

namespace genrt {
namespace text {

namespace {

/// Reads `n` bytes at `off` of the plan into `out`; false if it cannot.
using ReadAt = std::function<bool(uint64_t off, uint64_t n, std::string &out)>;

// The tokenizer section of a plan of `fileBytes` bytes, read through `read`
// (a file or bytes in memory); `name` names the plan in errors.
// The chat part of the tokenizer section: string maps, checked.
Status readChat(const json::Value &t, PlanChat &chat) {
  auto strings = [](const json::Value *v, const char *what, std::map<std::string, std::string> &out) {
    if (!v)
      return Status::ok();
    if (!v->isObject())
      return Status::error(std::string("metadata: the tokenizer's '") + what + "' must be an object");
    for (const auto &[k, e] : v->members()) {
      if (!e.isString())
        return Status::error(std::string("metadata: the tokenizer's '") + what + "' entry '" + k +
                             "' must be a string");
      out[k] = e.asString();
    }
    return Status::ok();
  };
  if (Status s = strings(t.find("special_tokens"), "special_tokens", chat.specialTokens); !s)
    return s;
  const json::Value *ct = t.find("chat_template");
  if (ct && ct->isString()) {
    chat.templates[""] = ct->asString();
    return Status::ok();
  }
  return strings(ct, "chat_template", chat.templates);
}

Status load(const std::string &name, uint64_t fileBytes, const ReadAt &read, std::unique_ptr<Tokenizer> &out,
            PlanChat *chat) {
  out.reset();
  if (chat)
    *chat = PlanChat{};
  auto err = [&](const std::string &m) { return Status::error("plan '" + name + "': " + m); };
  std::string head;
  if (fileBytes < kPlanHeaderBytes || !read(0, kPlanHeaderBytes, head))
    return err("too small to be a plan (" + std::to_string(fileBytes) + " bytes)");
  PlanHeader h;
  if (std::string bad = readPlanHeader(reinterpret_cast<const uint8_t *>(head.data()), fileBytes, h); !bad.empty())
    return err(bad);
  std::string metaText;
  if (!read(h.jsonOffset, h.jsonBytes, metaText))
    return err("cannot read the metadata");
  json::Value meta;
  if (Status s = json::parse(metaText, meta); !s)
    return err("metadata: " + s.message());
  const json::Value *t = meta.isObject() ? meta.find("tokenizer") : nullptr;
  if (!t)
    return Status::ok();
  const json::Value *fmt = t->isObject() ? t->find("format") : nullptr;
  const json::Value *off = t->isObject() ? t->find("offset") : nullptr;
  const json::Value *bytes = t->isObject() ? t->find("bytes") : nullptr;
  if (!fmt || !fmt->isString() || fmt->asString() != "tokenizer.json")
    return err("metadata: the tokenizer's 'format' must be \"tokenizer.json\"");
  if (!off || !off->isInteger() || off->asInt() < 0 || !bytes || !bytes->isInteger() || bytes->asInt() < 0)
    return err("metadata: the tokenizer needs an integer 'offset' and 'bytes'");
  uint64_t o = static_cast<uint64_t>(off->asInt()), n = static_cast<uint64_t>(bytes->asInt());
  if (o > h.blobBytes || n > h.blobBytes - o)
    return err("the tokenizer lies outside the data blob (truncated file?)");
  std::string text;
  if (!read(h.blobOffset + o, n, text))
    return err("cannot read the tokenizer");
  if (Status s = Tokenizer::fromJson(text, out); !s)
    return err(s.message());
  if (chat)
    if (Status s = readChat(*t, *chat); !s) {
      out.reset();
      return err(s.message());
    }
  return Status::ok();
}

} // namespace

Status loadPlanTokenizer(const std::string &path, std::unique_ptr<Tokenizer> &out, PlanChat *chat) {
  return statusOnOutOfMemory("reading the tokenizer of plan '" + path + "'", [&] {
    out.reset();
    // A named pipe would block the open (loadPlan refuses one the same way).
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return Status::error("plan '" + path + "': not a regular file");
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f)
      return Status::error("cannot open plan '" + path + "': " + std::strerror(errno));
    uint64_t fileBytes = static_cast<uint64_t>(f.tellg());
    return load(path, fileBytes,
                [&](uint64_t off, uint64_t n, std::string &text) {
                  text.assign(n, '\0');
                  f.clear();
                  f.seekg(static_cast<std::streamoff>(off));
                  f.read(&text[0], static_cast<std::streamsize>(n));
                  return static_cast<uint64_t>(f.gcount()) == n;
                },
                out, chat);
  });
}

Status loadPlanTokenizerFromMemory(const uint8_t *data, size_t size, const std::string &name,
                                   std::unique_ptr<Tokenizer> &out, PlanChat *chat) {
  return statusOnOutOfMemory("reading the tokenizer of plan '" + name + "'", [&] {
    return load(name, size,
                [&](uint64_t off, uint64_t n, std::string &text) {
                  if (off > size || n > size - off)
                    return false;
                  text.assign(reinterpret_cast<const char *>(data) + off, n);
                  return true;
                },
                out, chat);
  });
}

} // namespace text
} // namespace genrt
