// Serialises a derived, memory-planned module into a .plan file
// (runtime/plan/PlanFormat.h): JSON metadata plus one aligned blob of weights and
// tensor attributes.
#pragma once
#include "codegen/CudaEmitter.h"
#include "codegen/NvrtcCompile.h"
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace genc {

struct PlanStats {
  int64_t weightsBytes = 0, kvCacheBytes = 0, arenaBytes = 0;
  /// What one @decode_step reads of them (codegen/StepWeights.h): without
  /// the embedding tables it gathers rows from, nor the encoder's.
  int64_t decodeWeightsBytes = 0;
  /// Encoder-decoder: the cross-attention K/V cache, one entry per batch item
  /// (shared by its beams, so it does not grow with max beams).
  int64_t crossKvCacheBytes = 0;
  /// What it would be with a copy per beam (as Hugging Face expands the
  /// encoder's output per beam): max beams x crossKvCacheBytes.
  int64_t crossKvCacheBytesUnshared = 0;
  int64_t kvCacheBytesUnshared = 0; // the self cache with a copy of the prompt a beam
  std::map<std::string, int64_t> arenaBytesByFunction;
  /// Kernel launches of one @decode_step: gemm, attention, fused, other.
  std::map<std::string, int64_t> decodeStepLaunches;
  std::map<std::string, int64_t> decodeStepLaunchesOneRow; // GEMV entries running their neighbours
  /// The 4/8-bit matrices (matmul_nbits), by the name of their codes: bytes
  /// of codes, scales and zero points (codegen/StepWeights.h).
  std::map<std::string, int64_t> quantizedWeights;
};

/// A tokenizer to pack into the plan (driver/TokenizerFiles.h).
struct PlanTokenizer {
  std::string json;                                 // tokenizer.json text
  std::string source;                               // the file it came from
  std::map<std::string, std::string> specialTokens; // tokenizer_config.json's bos/eos/unk/sep/pad/cls/mask
  /// The model's chat templates (Jinja text) by name; one unnamed template
  /// is "" (transformers' tokenizer.chat_template as a string).
  std::map<std::string, std::string> chatTemplates;
  int64_t idLimit = 0;                              // one past its largest id
};

/// What a plan holds besides the module.
struct PlanParts {
  /// How float activations are stored on the GPU (f32, f16, bf16;
  /// codegen/KernelStorage.h), recorded as the plan's activation_dtype.
  DType activation = DType::F32;
  /// The fused bodies' CUDA kernels and their cubins/PTX (both or neither),
  /// stored in the plan's `kernels` section.
  const CudaModule *kernels = nullptr;
  const CompiledModule *code = nullptr;
  /// The resolved compile profile as YAML (driver/ProfileYaml.h),
  /// stored as `profile` so the plan can be rebuilt; empty: none.
  std::string profile;
  /// A tokenizer packed into the blob (its ids must fit the vocabulary).
  const PlanTokenizer *tokenizer = nullptr;
};

/// Writes `m` (after derive-plan and plan-memory) to `path`. Nothing is
/// written on error. The same module and parts give the same bytes.
llvm::Expected<PlanStats> writePlan(const Module &m, const std::string &path,
                                    const PlanParts &parts = {});

} // namespace genc
