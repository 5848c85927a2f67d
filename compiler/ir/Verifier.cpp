#include "compiler/ir/Verifier.h"

#include "compiler/ir/OpDefs.h"

#include <set>

namespace genc {

static llvm::Error fail(const Function &f, const Op *op, const std::string &msg) {
  std::string where = "@" + f.name();
  if (op)
    where += ": op '" + op->kind() + "'" + (op->loc().empty() ? "" : " at \"" + op->loc() + "\"");
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "verifier: %s: %s",
                                 where.c_str(), msg.c_str());
}

llvm::Error verifyFunction(const Function &f, const Module &m) {
  std::set<const Value *> defined;
  for (auto &a : f.arguments())
    defined.insert(a.get());
  for (auto &opPtr : f.ops()) {
    const Op *op = opPtr.get();
    const OpDef *def = lookupOp(op->kind());
    if (!def)
      return fail(f, op, "unknown op kind");
    int n = static_cast<int>(op->numOperands());
    if (n < def->minOperands || (def->maxOperands >= 0 && n > def->maxOperands))
      return fail(f, op, "has " + std::to_string(n) + " operands, expected " +
                             std::to_string(def->minOperands) +
                             (def->maxOperands == def->minOperands
                                  ? ""
                                  : ".." + (def->maxOperands < 0 ? std::string("N")
                                                                 : std::to_string(def->maxOperands))));
    int r = static_cast<int>(op->numResults());
    if (r < def->minResults || (def->maxResults >= 0 && r > def->maxResults))
      return fail(f, op, "has " + std::to_string(r) + " results");
    for (size_t i = 0; i < op->operands().size(); ++i) {
      const Value *v = op->operand(i);
      if (!v)
        return fail(f, op, "operand " + std::to_string(i) + " is null");
      if (v->isWeight()) {
        if (m.weight(v->name()) != v)
          return fail(f, op, "operand " + std::to_string(i) + " is a weight of another module");
      } else if (!defined.count(v)) {
        return fail(f, op, "operand " + std::to_string(i) + " is used before it is defined");
      }
    }
    for (auto *res : op->results())
      defined.insert(res);
  }
  for (auto &o : f.outputs()) {
    if (!o.value || (!o.value->isWeight() && !defined.count(o.value)))
      return fail(f, nullptr, "output '" + o.name + "' is not defined in the function");
  }
  return llvm::Error::success();
}

llvm::Error verifyModule(const Module &m) {
  for (auto &w : m.weights()) {
    const Tensor *t = w->data();
    if (!t)
      continue;
    auto shape = constantShape(w->shape());
    if (!shape || *shape != t->shape() || t->dtype() != w->dtype())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "verifier: weight @%s: data does not match its type %s",
                                     w->name().c_str(), w->type().str().c_str());
  }
  for (auto &f : m.functions())
    if (auto e = verifyFunction(*f, m))
      return e;
  return llvm::Error::success();
}

} // namespace genc
