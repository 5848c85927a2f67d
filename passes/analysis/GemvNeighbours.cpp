#include "passes/analysis/GemvNeighbours.h"

namespace genc {

bool gemvMayRunBefore(const Function &f, const Op *prev, const Op *mm) {
  return prev && mm && prev->is("fused") && prev->strAttr("pattern", "") == "reduction" && mm->is("matmul") &&
         mm->numOperands() > 0 && mm->operand(0)->definingOp() == prev && f.soleUser(mm->operand(0)) == mm;
}

bool gemvMayRunAfter(const Function &f, const Op *mm, const Op *next) {
  return mm && next && mm->is("matmul") && next->is("fused") && next->strAttr("pattern", "") == "elementwise" &&
         next->numOperands() == 1 && next->numResults() == 1 && next->operand(0) == mm->result(0) &&
         f.soleUser(mm->result(0)) == next;
}

} // namespace genc
