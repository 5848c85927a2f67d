#include "codegen/LaunchCount.h"

#include "compiler/ir/OpDefs.h"
#include "passes/analysis/Fusability.h"

namespace genc {

std::map<std::string, int64_t> countLaunches(const Function &f, bool oneRow) {
  std::map<std::string, int64_t> n = {{"gemm", 0}, {"attention", 0}, {"fused", 0}, {"other", 0}};
  for (auto &op : f.ops()) {
    const OpDef *d = lookupOp(op->kind());
    OpPattern p = d ? d->pattern : OpPattern::Opaque;
    if (op->is("fused"))
      n["fused"] += oneRow && op->intAttr("gpu_in_gemv", 0) ? 0 : 1;
    else if (p == OpPattern::Gemm)
      ++n["gemm"];
    else if (p == OpPattern::Attention)
      ++n["attention"];
    else if (isHostValue(*op) || isView(*op)) // plan-time values; aliased buffers
      continue;
    else
      ++n["other"];
  }
  return n;
}

} // namespace genc
