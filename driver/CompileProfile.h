// A compile profile: every option of `genc compile` that shapes the plan.
//
// It is read from YAML (`--profile`, driver/ProfileYaml.h),
// overridden by the flags given, resolved against the model (every default
// filled in), and the resolved profile is what `--print-profile` prints and
// the plan embeds: compiling the same model with it gives the same plan.
// Output choices (-o, --emit, --stats-json, --remarks-file) are not part of
// it: they say where results go, not what the plan is.
#pragma once
#include "codegen/AttentionKernels.h"
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace genc {

/// Token ids the plan carries as generate() defaults (genrun reads them);
/// unset: the model's config.json / generation_config.json.
struct GenerationDefaults {
  std::optional<std::vector<int64_t>> eosTokenId;
  std::optional<int64_t> padTokenId, bosTokenId, decoderStartTokenId;
  bool any() const { return eosTokenId || padTokenId || bosTokenId || decoderStartTokenId; }
};

/// The `cuda` section: how the generated attention kernels are shaped,
/// which changes their speed, not what they compute (the fields of
/// codegen/AttentionKernels.h's AttentionKernelOptions, whose defaults fill
/// them when the profile is resolved).
struct CudaKernelChoices {
  std::optional<int64_t> attentionHeadsPerBlock; // 1..8
  std::optional<int64_t> decodeStageKib;         // 16..200
  std::optional<bool> decodeStream;
  std::optional<bool> attentionTrace; // diagnostics: stage stamps
  /// Persistent blocks of the decode-step kernel (the SMs of the GPU it is
  /// scheduled for, 132 on an H100/H200); 0 keeps one kernel per op.
  std::optional<int64_t> stepBlocks; // 0..1024
  /// Of those, how many share an SM (each with 1/n of its shared memory:
  /// more warps to hide latency, and a block that waits leaves the SM to
  /// another); 1..4.
  std::optional<int64_t> stepBlocksPerSm;
  /// Warps of a step-kernel block, 4 or 8 (more warps hide more latency; a
  /// decode attention routine runs on four of them).
  std::optional<int64_t> stepWarps;
  bool any() const {
    return attentionHeadsPerBlock || decodeStageKib || decodeStream || attentionTrace || stepBlocks ||
           stepBlocksPerSm || stepWarps;
  }
};

struct CompileProfile {
  std::optional<int64_t> maxBatch, maxBeams, maxLength, maxSourceLength, maxTokens;
  /// Tokens each beam generates at most: beams then share their prompt's
  /// K/V and store only what they generate (unset: a whole copy a beam).
  std::optional<int64_t> maxNewTokens;
  std::optional<std::string> dtype;                   // f32, f16, bf16
  /// The cross-attention cache's element type: i8 (a scale a row), or the
  /// plan's dtype (unset: the plan's dtype).
  std::optional<std::string> crossKvDtype;
  /// The linear layers' weights as 8-bit or 4-bit blocks ("int8", "int4":
  /// passes/QuantizeWeights.cpp); unset: as the model stores them. The
  /// three below only go with it (resolved: 32, false, false).
  std::optional<std::string> weights;
  std::optional<int64_t> groupSize;      // codes per scale along K
  std::optional<bool> quantizeLmHead;    // the vocabulary projection too
  std::optional<bool> weightsZeroPoint;  // a zero point per group (else symmetric)
  /// 4-bit / 8-bit products' activations, as ONNX MatMulNBits'
  /// accuracy_level: 4 quantizes them to int8 on the CPU, 0-3 keep f32
  /// (unset: f32; the importer leaves a model's own accuracy_level aside).
  std::optional<int64_t> nbitsAccuracyLevel;
  std::optional<std::vector<std::string>> gpuArchs;   // [] = no GPU kernels
  CudaKernelChoices cuda;
  std::optional<std::vector<std::string>> passes;     // [] = none
  GenerationDefaults generation;
  /// A tokenizer.json (or its folder) to pack into the plan; unset: the one
  /// beside the model, if any (genc --no-tokenizer packs none).
  std::optional<std::string> tokenizer;

  /// Every key `over` sets replaces ours (flags over a file).
  void overrideWith(const CompileProfile &over);
};

// The checks flags and profile keys share: empty when the value is fine,
// else why not ("must be a positive integer at most 16777216 (got 0)").
std::string checkCount(int64_t v);
std::string checkTokenId(int64_t v);
std::string checkDType(const std::string &s);
std::string checkCrossKvDType(const std::string &s);
std::string checkWeights(const std::string &s);
std::string checkGroupSize(int64_t v);
std::string checkAccuracyLevel(int64_t v);
std::string checkPassName(const std::string &s);
std::string checkHeadsPerBlock(int64_t v);
std::string checkStageKib(int64_t v);
std::string checkStepBlocks(int64_t v);
std::string checkStepBlocksPerSm(int64_t v);
std::string checkStepWarps(int64_t v);

/// `given` with every key set: the model's maximum positions (at most 2048)
/// for max_length, genc's defaults for the other sizes, the standard
/// pipeline (the graph passes for `emitIr`), sm_80 + sm_90 where genc has
/// NVRTC, and the token ids of the model's config.
llvm::Expected<CompileProfile> resolveProfile(const CompileProfile &given, const Module &m,
                                              bool emitIr);

/// Writes a resolved profile's sizes (plan.*) and token ids (config.*) into
/// the module's metadata, where the passes and the plan writer read them.
void applyProfile(const CompileProfile &resolved, Module &m);

/// A resolved profile's `cuda` section, as codegen takes it.
AttentionKernelOptions attentionKernelOptions(const CompileProfile &resolved);

} // namespace genc
