#include "compiler/ir/Symbols.h"

namespace genc {

static Type substituted(const Type &t, const std::map<std::string, Dim> &sub) {
  Type r = t;
  for (Dim &d : r.shape)
    d = d.substitute(sub);
  return r;
}

void substituteSymbols(Function &f, const std::map<std::string, Dim> &sub) {
  for (auto &a : f.arguments())
    a->setType(substituted(a->type(), sub));
  for (auto &op : f.ops()) {
    for (Value *r : op->results())
      r->setType(substituted(r->type(), sub));
    for (auto &[name, attr] : op->attrs())
      if (std::holds_alternative<DimList>(attr)) {
        DimList dl = std::get<DimList>(attr);
        for (Dim &d : dl.dims)
          d = d.substitute(sub);
        op->setAttr(name, dl);
      }
  }
}

std::optional<std::vector<int64_t>> evaluateShape(const Shape &s,
                                                  const std::map<std::string, int64_t> &env) {
  std::vector<int64_t> r;
  for (const Dim &d : s) {
    auto v = d.evaluate(env);
    if (!v)
      return std::nullopt;
    r.push_back(*v);
  }
  return r;
}

} // namespace genc
