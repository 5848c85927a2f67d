// The tensor-core entry of matmul_nbits (runtime/cuda/NBitsAbi.h,
// gemvq_N_mma{1,2,4}): 9 to 64 rows of a against 4/8-bit codes read as the
// plan stores them, widened in registers to A's 16-bit type.
#pragma once

namespace genc {

/// The device-only primitives the template calls besides the prelude's
/// genc_mma (prmt, an f16x2 subtraction): emitted before the ABI, where a
/// host emulation of the templates (tests/tools/emulate_nbits_kernels.py)
/// puts its own, genc_mma's too.
const char *nbitsMmaPrimitives();

/// The template genc_gemvq_mma and its helpers, portable C++ over the
/// primitives; appended to NBitsKernels.cpp's templates.
const char *nbitsMmaTemplate();

} // namespace genc
