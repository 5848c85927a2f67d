// CUDA C++ for fused groups: one `extern "C" __global__` kernel per fused
// body function (@fused_<fn>_<n>, passes/Fuse.cpp): fp32 math in registers,
// parameters in their storage dtype (f32, or f16/bf16 for weights and
// activations: codegen/KernelStorage.h), vector loads and stores along the
// last axis where its length allows (codegen/CudaVectorize.h).
//
// Each output element is computed by walking the body backwards from the
// output: elementwise ops compose, injective ops (reshape, transpose, slice,
// concat, split, gather, (un)squeeze, expand) map the output index to an
// input index. Groups with a norm/softmax over the last axis run one block
// per row: the reduced row sits in shared memory, the block reduces it.
//
// Kernel parameters, in order: one `long long` per shape symbol (sorted by
// name), a pointer per body argument, a pointer per body result; every
// pointer 16-byte aligned.
#pragma once
#include "codegen/AttentionKernels.h"
#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace genc {

struct CudaTensorParam {
  std::string name; // in0.., out0..
  DType dtype;      // in memory (the body's value may say f32: math type)
  Shape shape;
};

struct CudaKernel {
  std::string name;   // the body function's name (= the kernel's)
  std::string code;   // the kernel alone (legend, constants, function)
  std::string source; // prelude + code: a whole translation unit for NVRTC
  std::vector<std::string> symbols;
  std::vector<CudaTensorParam> inputs, outputs;
  /// "elementwise": grid-stride over each output's elements, or over vectors
  /// of them; `work` = the largest count of elements or vectors (a thread
  /// each). "rows": one block per row (blockIdx.x strides over rows), `work`
  /// = the largest row count; needs `sharedFloats` floats of dynamic shared
  /// memory.
  std::string mode;
  Dim work;
  Dim sharedFloats;
  int blockSize = 256;
  /// "rows" kernels: the row function as the step kernel calls it
  /// (`<name>_step_rows<NT>`, codegen/StepKernel.cpp), emitted only there.
  std::string stepRows;
};

struct CudaModule {
  DType activation = DType::F32; // storage of float activations
  std::vector<CudaKernel> kernels;
  /// The attention ops' kernel families (codegen/AttentionKernels.h), and
  /// whether they stamp their stages (AttentionKernelOptions::trace).
  std::string attentionCode;
  std::vector<std::string> attentionKernels;
  bool attentionTrace = false;
  /// The matmuls' GEMV families and the weight transposes (codegen/GemvKernels.h),
  /// then matmul_nbits' GEMVs and tiles (codegen/NBitsKernels.h).
  std::string gemvCode;
  std::vector<std::string> gemvKernels;
  /// The token-choice kernels (codegen/TokenKernels.h), in every module.
  std::vector<std::string> tokenKernels;
  /// The step kernel (codegen/StepKernel.h): its code after the attention
  /// code, empty where @decode_step has no schedule.
  std::string stepCode;
  std::vector<std::string> stepKernels;
  std::string stepDropped; // why a schedule was dropped ("": none was)
  /// Bodies with no kernel: (body name, why). The CPU executor runs them.
  std::vector<std::pair<std::string, std::string>> skipped;
};

/// The C++ expression of elementwise op `op` over its operands' expressions
/// `a`; empty (and `why`) where it has none.
std::string elementwiseExpr(const Op &op, const std::vector<std::string> &a, std::string &why);

/// Kernels for every fused body of `m` (functions named fused_*), float
/// activations stored as `activation` (f32, f16 or bf16), and the attention
/// ops' kernels as `attention` shapes them (which tags those ops with their
/// kernels' names).
CudaModule emitCuda(Module &m, DType activation = DType::F32, const AttentionKernelOptions &attention = {});

/// All kernels' sources, one after another (for `--emit=cuda`), and a
/// comment per skipped body.
std::string cudaModuleText(const CudaModule &cm);

/// One translation unit with every kernel (the prelude once): what NVRTC
/// compiles into one cubin per architecture.
std::string cudaModuleSource(const CudaModule &cm);

} // namespace genc
