// Storage dtypes of the fused kernels' parameters: how the values a kernel
// reads and writes lie in GPU memory, as opposed to their IR dtype (IR float =
// fp32 math, in registers).
//
// The rule for which values are stored narrower is passes/analysis/Storage.h.
#pragma once
#include "compiler/ir/IR.h"

#include <map>
#include <string>
#include <vector>

namespace genc {

struct KernelParamDTypes {
  std::vector<DType> inputs, outputs; // one per body argument / result
};

/// Per fused body (by name): the storage dtype of each parameter, derived
/// from the values its `fused` op reads and writes in the calling program.
/// A body whose call sites disagree is left out, with the reason in
/// `conflicts` (the emitter then gives it no kernel).
std::map<std::string, KernelParamDTypes>
kernelParamDTypes(const Module &m, DType activation,
                  std::map<std::string, std::string> &conflicts);

} // namespace genc
