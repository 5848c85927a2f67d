#include "runtime/plan/WeightUses.h"

namespace genrt {

std::vector<char> weightsReadOnlyBy(const Plan &plan, const std::function<bool(const OpInfo &, size_t)> &fits) {
  std::vector<char> ok(plan.weights.size(), 0), seen(plan.weights.size(), 0);
  for (const auto &[name, prog] : plan.programs)
    for (const OpInfo &op : prog.ops)
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const ValueInfo &v = prog.values[op.operands[i]];
        if (v.storage != Storage::Weight || v.index < 0 || v.index >= static_cast<int32_t>(ok.size()))
          continue;
        ok[v.index] = (seen[v.index] ? ok[v.index] : 1) && fits(op, i);
        seen[v.index] = 1;
      }
  return ok;
}

} // namespace genrt
