// The neighbours a one-row GEMV may run itself (the GPU's decode matmuls and
// 4/8-bit matmuls, codegen/GemvKernels.cpp and NBitsKernels.cpp): the fused row kernel right before a matmul whose
// result the matmul alone reads as its a, and the elementwise fused body
// right after it that alone reads its product (a GLU). Codegen generates the
// entries for these pairs and plan-memory keeps their buffers apart; the
// executor checks them again on the plan it is given (runtime/cuda).
#pragma once
#include "compiler/ir/IR.h"

namespace genc {

/// `prev` is a fused row op (a reduction body: a norm) right before matmul
/// `mm` and `mm` alone reads a result of it, as its first operand (a).
bool gemvMayRunBefore(const Function &f, const Op *prev, const Op *mm);

/// `next` is an elementwise fused op with one operand and one result right
/// after matmul `mm`, and the only reader of `mm`'s product.
bool gemvMayRunAfter(const Function &f, const Op *mm, const Op *next);

/// gemvMayRunAfter, and `next`'s body is a GLU: the product split into two
/// halves along its last axis, then float elementwise math on the halves
/// (and scalar constants) down to one result of half the width — what a
/// GEMV computes from weight rows n and N/2 + n (codegen/GemvKernels.cpp
/// turns the math into code, or declines an op it has no expression for).
bool gemvGluAfter(const Module &m, const Function &f, const Op *mm, const Op *next);

} // namespace genc
