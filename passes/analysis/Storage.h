// How a value of a plan program lies in memory: the one rule that sizes the
// arena (plan-memory), types the kernels' pointer parameters (codegen) and
// tells the executors what each buffer holds (the plan's `stored` dtypes).
//
// `genc compile --dtype f16|bf16` stores weights (genc casts them) and float
// activations in that type: the buffers GEMMs, attention and kernels pass to
// one another, and the caches. Kept f32, so that what the host reads is as
// exact as the CPU reference: the outputs of @prefill / @decode_step (the
// logits: greedy and beam ties hinge on small margins) and any float
// argument the host writes. @encode's outputs fill the cross-attention
// cache, so they take the activation dtype like the cache does. Integer and
// bool tensors (ids, positions, masks, gather indices) keep their dtype.
#pragma once
#include "compiler/ir/IR.h"

namespace genc {

/// The storage dtype of `v`, a value of program `f`, in a plan whose float
/// activations are stored as `activation`.
inline DType storageDType(const Function &f, const Value *v, DType activation) {
  if (v->isWeight() || !isFloat(v->dtype()) || activation == DType::F32)
    return v->dtype();
  for (const auto &a : f.arguments())
    if (a.get() == v)
      return v->dtype();
  if (f.name() != "encode")
    for (const auto &o : f.outputs())
      if (o.value == v)
        return v->dtype();
  return activation;
}

} // namespace genc
