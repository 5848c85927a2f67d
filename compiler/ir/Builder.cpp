#include "compiler/ir/Builder.h"

namespace genc {

Value *insertOp(Function &f, Op *before, const std::string &kind, std::vector<Value *> operands,
                Type type, std::map<std::string, Attribute> attrs) {
  auto op = std::make_unique<Op>(kind, std::move(operands), std::vector<Type>{std::move(type)},
                                 before ? before->loc() : std::string());
  for (auto &[k, a] : attrs)
    op->setAttr(k, std::move(a));
  auto at = before ? f.find(before) : f.ops().begin();
  return f.insertBefore(at, std::move(op))->result();
}

} // namespace genc
