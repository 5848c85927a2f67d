// share-fused-bodies: fused bodies that compute the same thing become one.
//
// `fuse` gives every group its own body function, so a 30-layer model has
// ~6 bodies per layer that differ only in their names: the same ops, shapes,
// dtypes and attributes, with each layer's weights passed in as arguments.
// Each distinct body is one kernel to generate, compile (NVRTC) and load, so
// sharing them makes compile time nearly independent of depth. Bodies are
// compared by their printed text without locations, their name blanked: a
// body that reads a weight directly names it, so bodies over different data
// never merge.
#include "compiler/ir/Printer.h"
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"

#include <map>
#include <sstream>

namespace genc {
namespace {

bool isBody(const Function &f) { return f.name().rfind("fused_", 0) == 0; }

// The body's text with its own name taken out of the header.
std::string bodyKey(const Function &f) {
  std::ostringstream os;
  PrintOptions po;
  po.locations = false;
  printFunction(f, os, po);
  std::string text = os.str();
  std::string name = "@" + f.name() + "(";
  if (size_t at = text.find(name); at != std::string::npos)
    text.replace(at, name.size(), "@(");
  return text;
}

} // namespace

llvm::Error shareFusedBodiesPass(Module &m) {
  std::map<std::string, std::string> firstWithKey; // key -> the body kept
  std::map<std::string, std::string> sharedAs;     // dropped body -> kept body
  for (const auto &f : m.functions()) {
    if (!isBody(*f))
      continue;
    auto [it, fresh] = firstWithKey.emplace(bodyKey(*f), f->name());
    if (!fresh)
      sharedAs[f->name()] = it->second;
  }
  if (sharedAs.empty())
    return llvm::Error::success();
  Remarks R(m, "share-fused-bodies");
  for (const auto &f : m.functions()) {
    if (isBody(*f))
      continue;
    int64_t shared = 0;
    for (auto &op : f->ops())
      if (op->is("fused"))
        if (auto it = sharedAs.find(op->strAttr("body")); it != sharedAs.end()) {
          op->setAttr("body", it->second);
          ++shared;
        }
    if (shared)
      R.passed("BodiesShared", *f) << arg("Ops", shared)
                                   << " fused ops now call a body another op already has";
  }
  for (const auto &[dropped, kept] : sharedAs)
    m.removeFunction(m.function(dropped));
  return llvm::Error::success();
}

} // namespace genc
