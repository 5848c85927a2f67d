// The CPU kernels, one per op kind: the runtime's CPU executor runs plans with
// them and the compiler's reference interpreter runs IR with them, so every
// op's semantics (docs/ir-ops.md) has one implementation.
//
// Value domain: every tensor a kernel sees is f32, i64 or bool (callers widen
// f16/bf16/f64 and narrow integers first) — except matmul's weight operand,
// which the CPU executor leaves bf16 in bf16 plans (runtime/cpu/MatmulBf16.h). Kernels recompute result shapes
// from their operands and check every shape and index that comes from data.
#pragma once
#include "runtime/plan/Attr.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/KernelError.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace genrt::cpu {

class ThreadPool;

struct KernelContext {
  /// Where kernels that split their work may run it (null: inline). Set by
  /// the executor; the interpreter runs everything on its own thread.
  ThreadPool *pool = nullptr;
  /// The op's b (a weight) laid out in panels at load (cpu/MatmulPanels.h):
  /// matmul reads them instead of b. Set by the executor around that op.
  const float *bPanels = nullptr;
  /// Sizes of the symbolic dims in force (for `dims` ops).
  const std::map<std::string, int64_t> *symbols = nullptr;
  /// Declared ranks of the op's results (a `dims` op yields a scalar for rank 0).
  const std::vector<int64_t> *resultRanks = nullptr;
  /// Runs a fused group's body (a sub-program named by the `fused` op's `body`
  /// attribute) op by op with these same kernels. Set by the executor.
  std::function<Error(const std::string &body, const std::vector<Tensor> &ins,
                      std::vector<Tensor> &outs)>
      runBody;
};

/// Computes `outs` (sized to the op's result count) from `ins`. Errors are a
/// plain message; callers add the op kind and location.
using Kernel = Error (*)(KernelContext &ctx, const AttrMap &attrs, const std::vector<Tensor> &ins,
                         std::vector<Tensor> &outs);

/// The kernel for `kind`, or null.
Kernel findKernel(const std::string &kind);

} // namespace genrt::cpu
