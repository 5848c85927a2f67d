#include "passes/analysis/Match.h"

#include <cmath>

namespace genc {

Op *defOf(const Value *v, const char *kind) {
  Op *d = v ? v->definingOp() : nullptr;
  return d && d->is(kind) ? d : nullptr;
}

std::optional<double> splatValue(const Value *v) {
  const Tensor *t = nullptr;
  if (v->isWeight())
    t = v->data();
  else if (Op *c = defOf(v, "constant"))
    t = c->tensorAttr("value");
  if (!t || t->numElements() == 0)
    return std::nullopt;
  double first = t->getDouble(0);
  for (int64_t i = 1; i < t->numElements(); ++i)
    if (t->getDouble(i) != first)
      return std::nullopt;
  return first;
}

bool isSplat(const Value *v, double expected, double relTol) {
  auto s = splatValue(v);
  return s && std::fabs(*s - expected) <= relTol * std::fmax(1.0, std::fabs(expected));
}

std::optional<ConstOperand> splitConstOperand(const Op *op) {
  if (op->numOperands() != 2)
    return std::nullopt;
  if (auto c = splatValue(op->operand(1)))
    return ConstOperand{op->operand(0), *c};
  if (auto c = splatValue(op->operand(0)))
    return ConstOperand{op->operand(1), *c};
  return std::nullopt;
}

size_t useCount(const Function &f, const Value *v) {
  size_t n = 0;
  for (auto &op : f.ops())
    for (auto *u : op->operands())
      n += u == v;
  for (auto &o : f.outputs())
    n += o.value == v;
  return n;
}

std::vector<Value *> mulLeaves(const Function &f, Value *v) {
  std::vector<Value *> leaves;
  Op *m = defOf(v, "mul");
  if (!m)
    return {v};
  for (Value *operand : m->operands()) {
    if (defOf(operand, "mul") && useCount(f, operand) == 1) {
      auto sub = mulLeaves(f, operand);
      leaves.insert(leaves.end(), sub.begin(), sub.end());
    } else {
      leaves.push_back(operand);
    }
  }
  return leaves;
}

} // namespace genc
