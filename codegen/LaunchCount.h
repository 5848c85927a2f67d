// How many kernels a function launches on a GPU, by kind: what fusion is for.
#pragma once
#include "compiler/ir/IR.h"

#include <map>
#include <string>

namespace genc {

/// Fused bodies are module functions named fused_*; they are not programs.
inline bool isFusedBody(const Function &f) { return f.name().rfind("fused_", 0) == 0; }

/// {"gemm", "attention", "fused", "other"} -> launches of one run of `f`.
/// Constants and dims are plan-time values (no launch). `oneRow`: a run of
/// one row on a GPU with the GEMV kernels, where the fused ops a GEMV entry
/// runs itself (attribute `gpu_in_gemv`, codegen/GemvKernels.cpp) launch
/// nothing of their own.
std::map<std::string, int64_t> countLaunches(const Function &f, bool oneRow = false);

} // namespace genc
