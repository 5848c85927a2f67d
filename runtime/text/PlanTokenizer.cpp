#include "runtime/text/PlanTokenizer.h"

#include "runtime/Json.h"
#include "runtime/PlanHeader.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace genrt {
namespace text {

namespace {

bool readAt(std::ifstream &f, uint64_t off, uint64_t n, std::string &out) {
  out.assign(n, '\0');
  f.seekg(static_cast<std::streamoff>(off));
  f.read(&out[0], static_cast<std::streamsize>(n));
  return static_cast<uint64_t>(f.gcount()) == n;
}

} // namespace

Status loadPlanTokenizer(const std::string &path, std::unique_ptr<Tokenizer> &out) {
  out.reset();
  auto err = [&](const std::string &m) { return Status::error("plan '" + path + "': " + m); };
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f)
    return Status::error("cannot open plan '" + path + "': " + std::strerror(errno));
  uint64_t fileBytes = static_cast<uint64_t>(f.tellg());
  std::string head;
  if (fileBytes < kPlanHeaderBytes || !readAt(f, 0, kPlanHeaderBytes, head))
    return err("too small to be a plan (" + std::to_string(fileBytes) + " bytes)");
  PlanHeader h;
  if (std::string bad = readPlanHeader(reinterpret_cast<const uint8_t *>(head.data()), fileBytes, h); !bad.empty())
    return err(bad);
  std::string metaText;
  if (!readAt(f, h.jsonOffset, h.jsonBytes, metaText))
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
  if (!readAt(f, h.blobOffset + o, n, text))
    return err("cannot read the tokenizer");
  if (Status s = Tokenizer::fromJson(text, out); !s)
    return err(s.message());
  return Status::ok();
}

} // namespace text
} // namespace genrt
