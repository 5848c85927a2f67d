// Which ops may sit inside a fused kernel (passes/Fuse.cpp) or inside the
// prologue an attention op absorbs (passes/AttentionIo.cpp).
#pragma once
#include "compiler/ir/IR.h"
#include "compiler/ir/OpDefs.h"

namespace genc {

OpPattern patternOf(const Op &op);

/// Computed at plan time (constants, symbolic dims): never a launch.
bool isHostValue(const Op &op);

/// Reshapes of contiguous memory (reshape, flatten, (un)squeeze): an executor
/// aliases the buffer, so they are no kernel of their own.
bool isView(const Op &op);

/// Elementwise, injective, and norms/softmax over the last axis.
bool isFusable(const Op &op);

} // namespace genc
