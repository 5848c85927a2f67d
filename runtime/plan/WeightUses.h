// Which of a plan's weights only certain ops read: an executor may then lay
// them out for those ops alone (the CUDA executor transposes matmul-only
// weights for its GEMV kernels, the CPU executor keeps them bf16).
#pragma once
#include "runtime/plan/Program.h"

#include <functional>
#include <vector>

namespace genrt {

/// Per plan weight: true when it is read at least once and every read, in
/// every program, is operand `i` of an op for which fits(op, i) holds.
std::vector<char> weightsReadOnlyBy(const Plan &plan, const std::function<bool(const OpInfo &, size_t)> &fits);

} // namespace genrt
