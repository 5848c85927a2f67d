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
// A value whose one reader is a view (a chain of views) that the program
// returns is stored as that output is: the view then shares its buffer
// (plan-memory) and no executor has a copy that converts.
#pragma once
#include "compiler/ir/IR.h"
#include "passes/analysis/Fusability.h"

namespace genc {

/// The storage dtype of `v`, a value of program `f`, in a plan whose float
/// activations are stored as `activation`.
inline DType storageDType(const Function &f, const Value *v, DType activation) {
  if (v->isWeight() || !isFloat(v->dtype()) || activation == DType::F32)
    return v->dtype();
  for (const auto &a : f.arguments())
    if (a.get() == v)
      return v->dtype();
  if (f.name() == "encode")
    return activation;
  auto returned = [&](const Value *x) {
    for (const auto &o : f.outputs())
      if (o.value == x)
        return true;
    return false;
  };
  if (returned(v))
    return v->dtype();
  for (const Value *x = v;;) {
    const Op *u = f.soleUser(x);
    if (!u || !isView(*u) || u->numResults() != 1 || u->operand(0) != x)
      return activation;
    x = u->result();
    if (returned(x))
      return v->dtype();
  }
}

} // namespace genc
