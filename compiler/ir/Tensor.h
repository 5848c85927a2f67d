// Host tensors live in the runtime (runtime/Tensor.h): the interpreter and the
// CPU executor share them, and so the kernels.
#pragma once
#include "compiler/ir/DType.h"
#include "runtime/Tensor.h"

namespace genc {
using genrt::bf16ToFloat;
using genrt::floatToBf16;
using genrt::floatToHalf;
using genrt::halfToFloat;
using genrt::Tensor;
} // namespace genc
