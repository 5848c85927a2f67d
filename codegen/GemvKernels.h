// Matrix-vector kernels for the plan's matmuls against weights, used by the
// CUDA executor when a run has at most 8 rows (decode at small batch):
// one family per distinct (activation, weight, result, bias storage,
// activation function), each with entry points for up to 1, 2, 4 and 8
// rows, plus the transpose kernels that lay weights out for them at load.
// Entry points and parameters: runtime/cuda/GemvAbi.h.
//
// Generated per plan, like the attention kernels, so that the runtime has
// no kernels of its own (no nvcc, no kernel zoo) and the storage types and
// epilogue are compile-time constants.
#pragma once
#include "codegen/CudaEmitter.h"
#include "compiler/ir/IR.h"

#include <optional>
#include <string>
#include <vector>

namespace genc {

struct GemvKernels {
  std::string code;               // ABI, templates, entry points (no prelude)
  std::vector<std::string> names; // every entry point
};

/// Gives every matmul of @encode / @prefill / @decode_step whose right
/// operand is a 2-D weight the attribute `gpu_gemv` (its family) and
/// returns the families' code (empty when there is none), with a one-row
/// entry that runs the fused row kernel before it (`kernels`, already
/// built) where the matmul alone reads that kernel's result.
GemvKernels emitGemvKernels(Module &m, DType activation, const std::vector<CudaKernel> &kernels);

/// The elementwise GLU body `next` right after matmul `mm` (its result
/// y [.., 2h] read as two halves) as C++ statements over t0 (the gate half's
/// element) and t1 (the up half's), each rounded through y's storage as the
/// body's kernel would load them, ending in the float `out`, and the
/// result's storage type; false where the body is no such GLU.
bool gemvGluCode(const Module &m, const Function &f, Op *mm, Op *next, const std::vector<CudaKernel> &kernels, DType y,
                 std::string &stmts, std::string &out, DType &outDType);

/// The fused row body before a matmul that a one-row GEMV may run itself:
/// its kernel and the result of it the matmul reads as a.
struct GemvPrologue {
  const CudaKernel *body;
  size_t result;
};

/// The fused row op `prev` right before `mm` (a matmul or a matmul_nbits
/// whose a is K elements of storage `a`), where `mm`'s one-row GEMV may run
/// its row itself: it alone reads the result, its kernel is a row kernel
/// within the GEMV's block, symbols, pointers and shared memory.
std::optional<GemvPrologue> gemvPrologueOf(const Function &f, Op *prev, Op *mm, const std::vector<CudaKernel> &kernels,
                                           int64_t K, DType a);

/// The prologue policy `name`_before: its `run(q, a, staged)` computes the
/// body's row into `staged` (shared memory; block 0 writes the body's other
/// results) and returns it as the GEMV's a.
std::string gemvProloguePolicy(const std::string &name, const GemvPrologue &pro);

} // namespace genc
