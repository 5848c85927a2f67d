// The tensor-core entries of the 16-bit GEMV families (GemvKernels.cpp
// emits them per family; runtime/cuda/GemvAbi.h says what each takes).
#pragma once

namespace genc {

/// The templates genc_gemv_mma (warps splitting K, 32 weight rows a block:
/// the `_mma16` entries) and genc_gemv_mma_wide (a's rows in shared memory
/// for 64 weight rows a block: `_mmaw16`, `_mmaw32`, `_mmaw64`), after the GEMV
/// templates they store through.
const char *gemvMmaTemplates();

/// The device-only primitives genc_gemv_mma_wide calls (cp.async), emitted
/// before the GEMV ABI, where a host emulation of the templates
/// (tests/tools/emulate_gemv_mma_kernels.py) puts its own.
const char *gemvMmaPrimitives();

} // namespace genc
