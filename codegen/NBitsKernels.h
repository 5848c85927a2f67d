// The kernels of `matmul_nbits` (4/8-bit block-quantized weights) for the
// CUDA executor: a GEMV family per distinct storage form with entries for up
// to 1, 2, 4 and 8 rows, and a tiled kernel for any number of rows. Entry
// points, parameters and shapes: runtime/cuda/NBitsAbi.h.
//
// Generated per plan like the float GEMVs (codegen/GemvKernels.h): bits,
// block size, the zero points' form and the storage types are compile-time
// constants of each family.
#pragma once
#include "codegen/CudaEmitter.h"
#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace genc {

struct NBitsKernels {
  std::string code;               // ABI, templates, entry points (no prelude)
  std::vector<std::string> names; // every entry point
};

/// Gives every matmul_nbits of @encode / @prefill / @decode_step the
/// attribute `gpu_gemv` (its family) and returns the families' code (empty
/// when there is none), with the one-row entries that run the fused row
/// body before it and/or the GLU body after it (`kernels`, already built;
/// codegen/GemvKernels.h) where it may. The code needs the float GEMVs' ABI
/// (GencGemvPrologue) before it.
NBitsKernels emitNBitsKernels(Module &m, DType activation, const std::vector<CudaKernel> &kernels);

} // namespace genc
