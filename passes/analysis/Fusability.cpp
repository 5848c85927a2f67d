#include "passes/analysis/Fusability.h"

namespace genc {

OpPattern patternOf(const Op &op) {
  const OpDef *d = lookupOp(op.kind());
  return d ? d->pattern : OpPattern::Opaque;
}

bool isHostValue(const Op &op) { return patternOf(op) == OpPattern::Shape && op.numOperands() == 0; }

bool isView(const Op &op) {
  if (!(op.is("reshape") || op.is("flatten") || op.is("squeeze") || op.is("unsqueeze")))
    return false;
  for (size_t i = 1; i < op.numOperands(); ++i) { // the shape / axes: host values
    Op *p = op.operand(i)->definingOp();
    if (!p || !isHostValue(*p))
      return false;
  }
  return true;
}

bool isFusable(const Op &op) {
  switch (patternOf(op)) {
  case OpPattern::Elementwise:
  case OpPattern::Injective:
    return true;
  case OpPattern::Reduction: // norms and softmax over the last axis; not cumsum
    return !op.is("cumsum");
  default:
    return false;
  }
}

} // namespace genc
