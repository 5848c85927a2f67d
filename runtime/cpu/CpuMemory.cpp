// What the CPU executor will allocate for a plan, added up before it
// allocates anything (runtime/HostMemory.h refuses a plan beyond the
// machine's memory).
#include "runtime/cpu/CpuExecutor.h"

#include "runtime/plan/WeightUses.h"
#include "runtime/cpu/ops/OpKernels.h"

namespace genrt {
namespace {

int64_t add(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

} // namespace

std::vector<char> cpuKeptWeights(const Plan &plan) {
  std::vector<char> keep =
      weightsReadOnlyBy(plan, [](const OpInfo &op, size_t i) { return op.kind == "matmul" && i == 1; });
  for (size_t w = 0; w < keep.size(); ++w)
    keep[w] = keep[w] && plan.weights[w].dtype() == DType::BF16 && plan.weights[w].rank() == 2;
  // The codes and packed zero points of matmul_nbits (runtime/plan/NBitsLayout.h).
  const std::vector<char> packed = weightsReadOnlyBy(
      plan, [](const OpInfo &op, size_t i) { return op.kind == "matmul_nbits" && (i == 1 || i == 3); });
  for (size_t w = 0; w < keep.size(); ++w)
    keep[w] = keep[w] || (packed[w] && plan.weights[w].dtype() == DType::U8);
  return keep;
}

int64_t cpuBytesNeeded(const Plan &plan) {
  // Weights the kernels' value domain widens (f16/bf16/f64 to f32, narrow
  // integers to i64) get copies; the others (and the bf16 matrices kept as
  // they are, and the packed codes of 4/8-bit matrices) are read from the
  // mapped file.
  int64_t n = 0;
  const std::vector<char> kept = cpuKeptWeights(plan);
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    const Tensor &w = plan.weights[i];
    DType d = cpu::domainOf(w.dtype());
    if (d != w.dtype() && !kept[i])
      n = add(n, mul(w.numElements(), static_cast<int64_t>(dtypeSize(d))));
  }
  n = add(n, add(plan.kv.selfBytes(), plan.kv.crossBytes()));
  n = add(n, plan.arenaBytes());
  // The search's logits: a row per slot, and as much again for the
  // processed copies the logits processors and beam search keep.
  return add(n, mul(mul(plan.kv.slots, plan.model.vocabSize), 2 * static_cast<int64_t>(sizeof(float))));
}

} // namespace genrt
