// Storage dtypes of the fused kernels' parameters: how the values a kernel
// reads and writes lie in GPU memory, as opposed to their IR dtype (IR float =
// fp32 math, in registers).
//
// `genc compile --dtype f16|bf16` stores the weights in that type (genc casts
// them before codegen) and the float activations as well: the buffers that
// GEMMs, attention and fused kernels pass to one another. Exceptions, kept
// f32 so that the host-facing values are as exact as the CPU reference:
//   - a program's outputs: the logits feed the search (greedy / beam ties
//     and HF parity hinge on small margins), and @encode's outputs are the
//     cross-attention cache, which the plan sizes as f32;
//   - a program's float arguments (none today: inputs are token ids and
//     positions), written by the host.
// Integer and bool tensors (ids, positions, masks, gather indices) keep their
// dtype. The CPU executor ignores all of this and computes in f32.
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
