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

#include <functional>
#include <set>
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

/// The elementwise GLU body after a product, as code (gemvGluCode's parts).
struct GemvGlu {
  std::string body;          // its kernel's name
  std::string stmts, out;    // statements over t0, t1 ending in the float `out`
  DType outDType;            // its result's storage
};

/// A GEMV family's one-row entry `name`: its GLU policy (glu) and its kernel,
/// with the prologue policy `name`_before written already (withBefore) and a
/// row of K elements.
using GemvEntryCode = std::function<std::string(const std::string &name, bool withBefore, const GemvGlu *glu,
                                                int64_t K)>;

/// What tells the GEMV families' fused one-row entries apart: their block,
/// parameter struct, kernel template, and the prologue policy of a plain
/// input and the epilogue policy of a plain store.
struct GemvEntryForm {
  int threads;
  const char *params, *kernel, *direct, *store;
};
/// The kernel line of entry `name` (template arguments `args`): with the
/// prologue policy `name`_before over a row of K elements (withBefore), and
/// the GLU policy `name`_then (glu) or the plain store.
std::string gemvEntryLine(const GemvEntryForm &form, const std::string &name, const std::string &args,
                          bool withBefore, bool glu, int64_t K);

/// The one-row entries of product `mm` (a matmul or a matmul_nbits of GEMV
/// family `family`, a and y stored as `a`, `y`) that also run the fused row
/// body `before` it, the GLU body `next` after it, or both, where it may
/// (passes/analysis/GemvNeighbours.h, and the body fits the GEMV's block):
/// each under a heading comment, with the prologue policy, then `entry`'s
/// code; each name once (`seen`), added to `names`. Marks the neighbours the
/// entries run `gpu_in_gemv`.
std::string gemvFusedEntries(const Module &m, const Function &f, Op *before, Op *mm, Op *next,
                             const std::vector<CudaKernel> &kernels, DType a, DType y, const std::string &heading,
                             const std::string &family, std::set<std::string> &seen, std::vector<std::string> &names,
                             const GemvEntryCode &entry);

} // namespace genc
