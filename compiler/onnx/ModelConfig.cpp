#include "compiler/onnx/ModelConfig.h"
#include "compiler/ir/ReadFile.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace genc {

static std::string scalarText(const llvm::json::Value &v) {
  if (auto i = v.getAsInteger())
    return std::to_string(*i);
  if (auto d = v.getAsNumber()) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  if (auto b = v.getAsBoolean())
    return *b ? "true" : "false";
  if (auto s = v.getAsString())
    return s->str();
  if (const auto *a = v.getAsArray()) {
    std::string r = "[";
    // Numbers and lists of them (token id lists, bad_words_ids, the pairs
    // of exponential_decay_length_penalty and sequence_bias), and lists of
    // strings (stop_strings), as JSON.
    for (size_t i = 0; i < a->size(); ++i) {
      const llvm::json::Value &x = (*a)[i];
      if (!x.getAsInteger() && !x.getAsNumber() && !x.getAsArray() && !x.getAsString())
        return "";
      std::string t;
      if (x.getAsString()) {
        llvm::raw_string_ostream os(t);
        os << x; // quoted and escaped
        os.flush();
      } else {
        t = scalarText(x);
      }
      if (t.empty())
        return "";
      r += (i ? ", " : "") + t;
    }
    return r + "]";
  }
  return "";
}

static llvm::Error loadOne(const std::string &path, Module &m) {
  auto buf = readRegularFile(path);
  if (!buf)
    return llvm::Error::success(); // optional
  auto v = llvm::json::parse((*buf)->getBuffer());
  if (!v)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", path.c_str(),
                                   llvm::toString(v.takeError()).c_str());
  const auto *obj = v->getAsObject();
  if (!obj)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: not a JSON object",
                                   path.c_str());
  for (const auto &[k, val] : *obj) {
    std::string text = scalarText(val);
    if (!text.empty() || val.kind() == llvm::json::Value::Null)
      m.metadata()["config." + k.str()] = text;
  }
  return llvm::Error::success();
}

llvm::Error loadModelConfig(const std::string &dir, Module &m) {
  for (const char *name : {"config.json", "generation_config.json"}) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    if (auto e = loadOne(p.str().str(), m))
      return e;
  }
  return llvm::Error::success();
}

} // namespace genc
