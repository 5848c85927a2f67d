#include "passes/analysis/GemvNeighbours.h"

#include <set>

namespace genc {

bool gemvMayRunBefore(const Function &f, const Op *prev, const Op *mm) {
  return prev && mm && prev->is("fused") && prev->strAttr("pattern", "") == "reduction" &&
         (mm->is("matmul") || mm->is("matmul_nbits")) &&
         mm->numOperands() > 0 && mm->operand(0)->definingOp() == prev && f.soleUser(mm->operand(0)) == mm;
}

bool gemvMayRunAfter(const Function &f, const Op *mm, const Op *next) {
  return mm && next && (mm->is("matmul") || mm->is("matmul_nbits")) && next->is("fused") && next->strAttr("pattern", "") == "elementwise" &&
         next->numOperands() == 1 && next->numResults() == 1 && next->operand(0) == mm->result(0) &&
         f.soleUser(mm->result(0)) == next;
}

bool gemvGluAfter(const Module &m, const Function &f, const Op *mm, const Op *next) {
  if (!gemvMayRunAfter(f, mm, next))
    return false;
  const Function *body = m.function(next->strAttr("body", ""));
  if (!body || body->arguments().size() != 1 || body->outputs().size() != 1)
    return false;
  const Value *in = body->arguments()[0].get();
  const Shape &ys = in->shape();
  if (ys.empty() || !ys.back().isConstant() || ys.back().constant() % 2)
    return false;
  Shape half(ys.begin(), ys.end() - 1);
  half.push_back(Dim(ys.back().constant() / 2));
  std::set<const Value *> known; // the halves and what is computed from them
  bool split = false;
  for (const auto &op : body->ops()) {
    if (op->is("constant"))
      continue;
    if (op->is("split")) {
      if (split || op->operand(0) != in || op->numResults() != 2 || op->result(0)->shape() != half ||
          op->result(1)->shape() != half || (op->intAttr("axis", 0) + in->rank()) % in->rank() != in->rank() - 1)
        return false;
      split = true;
      known.insert(op->result(0));
      known.insert(op->result(1));
      continue;
    }
    if (!split || op->numResults() != 1 || op->result(0)->shape() != half)
      return false;
    for (const Value *o : op->operands())
      if (!known.count(o) && !(o->definingOp() && o->definingOp()->is("constant")))
        return false;
    known.insert(op->result(0));
  }
  return split && known.count(body->outputs()[0].value) && body->outputs()[0].value->definingOp() &&
         !body->outputs()[0].value->definingOp()->is("split");
}

} // namespace genc
