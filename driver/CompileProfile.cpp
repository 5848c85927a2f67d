#include "driver/CompileProfile.h"

#include "codegen/NvrtcCompile.h"
#include "compiler/ir/DType.h"
#include "compiler/ir/Metadata.h"
#include "passes/PassRegistry.h"
#include "passes/Passes.h"
#include "passes/analysis/PlanOptions.h"

namespace genc {

static llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

void CompileProfile::overrideWith(const CompileProfile &o) {
  auto take = [](auto &mine, const auto &theirs) {
    if (theirs)
      mine = theirs;
  };
  take(maxBatch, o.maxBatch);
  take(maxBeams, o.maxBeams);
  take(maxLength, o.maxLength);
  take(maxTokens, o.maxTokens);
  take(maxSourceLength, o.maxSourceLength);
  take(maxNewTokens, o.maxNewTokens);
  take(dtype, o.dtype);
  take(crossKvDtype, o.crossKvDtype);
  take(weights, o.weights);
  take(groupSize, o.groupSize);
  take(quantizeLmHead, o.quantizeLmHead);
  take(weightsZeroPoint, o.weightsZeroPoint);
  take(nbitsAccuracyLevel, o.nbitsAccuracyLevel);
  take(gpuArchs, o.gpuArchs);
  take(cuda.attentionHeadsPerBlock, o.cuda.attentionHeadsPerBlock);
  take(cuda.decodeStageKib, o.cuda.decodeStageKib);
  take(cuda.stepBlocks, o.cuda.stepBlocks);
  take(cuda.stepBlocksPerSm, o.cuda.stepBlocksPerSm);
  take(cuda.stepWarps, o.cuda.stepWarps);
  take(cuda.decodeStream, o.cuda.decodeStream);
  take(cuda.attentionTrace, o.cuda.attentionTrace);
  take(passes, o.passes);
  take(generation.eosTokenId, o.generation.eosTokenId);
  take(generation.padTokenId, o.generation.padTokenId);
  take(generation.bosTokenId, o.generation.bosTokenId);
  take(generation.decoderStartTokenId, o.generation.decoderStartTokenId);
  take(tokenizer, o.tokenizer);
}

std::string checkCount(int64_t v) {
  constexpr int64_t kMax = int64_t(1) << 24;
  if (v > 0 && v <= kMax)
    return "";
  return "must be a positive integer at most " + std::to_string(kMax) + " (got " +
         std::to_string(v) + ")";
}

std::string checkTokenId(int64_t v) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1;
  if (v >= 0 && v <= kMax)
    return "";
  return "must be a token id, 0 to " + std::to_string(kMax) + " (got " + std::to_string(v) + ")";
}

std::string checkDType(const std::string &s) {
  auto dt = parseDType(s);
  if (dt && (*dt == DType::F32 || *dt == DType::F16 || *dt == DType::BF16))
    return "";
  return "must be f32, f16 or bf16 (got '" + s + "')";
}

std::string checkCrossKvDType(const std::string &s) {
  auto dt = parseDType(s);
  if (dt && (*dt == DType::I8 || *dt == DType::F32 || *dt == DType::F16 || *dt == DType::BF16))
    return "";
  return "must be i8 or the plan's dtype (got '" + s + "')";
}

std::string checkWeights(const std::string &s) {
  return s == "int8" || s == "int4" ? "" : "must be int8 or int4 (got '" + s + "')";
}

std::string checkGroupSize(int64_t v) {
  return v >= 16 && v <= 256 && (v & (v - 1)) == 0 ? ""
                                                    : "must be a power of two from 16 to 256 (got " + std::to_string(v) + ")";
}

std::string checkAccuracyLevel(int64_t v) {
  return v >= 0 && v <= 4 ? "" : "must be 0 to 4 (got " + std::to_string(v) + ")";
}

std::string checkPassName(const std::string &s) {
  return lookupPass(s) ? "" : "unknown pass '" + s + "' (known: " + knownPassNames() + ")";
}

std::string checkHeadsPerBlock(int64_t v) {
  if (v >= 1 && v <= 8)
    return "";
  return "must be 1 to 8 query heads (got " + std::to_string(v) + ")";
}

std::string checkStepBlocks(int64_t v) {
  if (v >= 0 && v <= 1024)
    return "";
  return "must be 0 (one kernel per op) to 1024 blocks (got " + std::to_string(v) + ")";
}

std::string checkStepBlocksPerSm(int64_t v) {
  if (v >= 1 && v <= 4)
    return "";
  return "must be 1 to 4 blocks an SM (got " + std::to_string(v) + ")";
}

std::string checkStepWarps(int64_t v) {
  if (v == 4 || v == 7)
    return "";
  return "must be 4 or 7 compute warps (got " + std::to_string(v) + "; the copy warp comes on top)";
}

std::string checkStageKib(int64_t v) {
  if (v >= 16 && v <= 200)
    return "";
  return "must be 16 to 200 KiB (got " + std::to_string(v) + ")";
}

// The largest length the model's position embeddings allow, capped at 2048:
// sizing the caches for 128k positions by default would cost gigabytes.
static int64_t defaultMaxLength(const Module &m) {
  for (const char *k : {"config.max_position_embeddings", "config.n_positions"})
    if (auto v = metadataInt(m, k); v && *v > 0)
      return std::min<int64_t>(*v, 2048);
  return 2048;
}

static void resolveGeneration(GenerationDefaults &g, const Module &m) {
  if (!g.eosTokenId) {
    auto eos = metadataInts(m, "config.eos_token_id");
    if (!eos.empty())
      g.eosTokenId = eos;
  }
  auto fill = [&](std::optional<int64_t> &v, const char *key) {
    if (!v)
      v = metadataInt(m, key);
  };
  fill(g.padTokenId, "config.pad_token_id");
  fill(g.bosTokenId, "config.bos_token_id");
  fill(g.decoderStartTokenId, "config.decoder_start_token_id");
}

llvm::Expected<CompileProfile> resolveProfile(const CompileProfile &given, const Module &m,
                                              bool emitIr) {
  CompileProfile p = given;
  PlanOptions defaults;
  p.maxBatch = p.maxBatch.value_or(defaults.maxBatch);
  p.maxBeams = p.maxBeams.value_or(defaults.maxBeams);
  p.maxLength = p.maxLength.value_or(defaultMaxLength(m));
  // Refused before any pass runs: a decoder-only model has no sources to bound.
  if (p.maxSourceLength && !(m.function("encoder") && m.function("decoder")))
    return fail("--max-source-length / max_source_length is for encoder-decoder models; this model has no "
                "encoder (--max-length bounds prompt + generated tokens)");
  if (p.maxNewTokens && *p.maxNewTokens >= *p.maxLength)
    return fail("--max-new-tokens / max_new_tokens (" + std::to_string(*p.maxNewTokens) +
                ") must be below max_length (" + std::to_string(*p.maxLength) +
                "): a prompt takes at least one position");
  if (!p.maxTokens) {
    PlanOptions o;
    o.maxBatch = *p.maxBatch;
    o.maxLength = *p.maxLength;
    p.maxTokens = o.prefillTokens();
  }
  p.dtype = p.dtype.value_or("f32");
  if (p.crossKvDtype && *p.crossKvDtype != "i8" && *p.crossKvDtype != *p.dtype)
    return fail("--cross-kv-dtype / cross_kv_dtype " + *p.crossKvDtype + ": the cross-attention cache is held as "
                "i8 or as the plan's dtype (" + *p.dtype + ")");
  if (p.crossKvDtype == std::string("i8") && !(m.function("encoder") && m.function("decoder")))
    return fail("--cross-kv-dtype / cross_kv_dtype is for encoder-decoder models; this model has no "
                "cross-attention cache");
  if (!p.weights && (p.groupSize || p.quantizeLmHead || p.weightsZeroPoint))
    return fail(std::string(p.groupSize ? "--group-size / group_size" : p.quantizeLmHead ? "--quantize-lm-head / quantize_lm_head"
                                                                        : "--weights-zero-point / weights_zero_point") +
                " goes with --weights / weights int8|int4");
  if (p.weights) {
    p.groupSize = p.groupSize.value_or(32);
    p.quantizeLmHead = p.quantizeLmHead.value_or(false);
    p.weightsZeroPoint = p.weightsZeroPoint.value_or(false);
  }
  if (!p.gpuArchs) {
    p.gpuArchs = haveNvrtc() ? std::vector<std::string>{"sm_80", "sm_90"}
                             : std::vector<std::string>{};
  } else if (!p.gpuArchs->empty() && !haveNvrtc()) {
    return fail("gpu_archs / --gpu-arch: genc was built without CUDA (NVRTC), it cannot compile "
                "kernels for " + p.gpuArchs->front());
  }
  if (!p.passes)
    p.passes = emitIr ? graphPipeline() : defaultPipeline();
  const AttentionKernelOptions kernels;
  p.cuda.attentionHeadsPerBlock = p.cuda.attentionHeadsPerBlock.value_or(kernels.headsPerBlock);
  p.cuda.decodeStageKib = p.cuda.decodeStageKib.value_or(kernels.stageKib);
  p.cuda.decodeStream = p.cuda.decodeStream.value_or(kernels.decodeStream);
  p.cuda.attentionTrace = p.cuda.attentionTrace.value_or(kernels.trace);
  p.cuda.stepBlocks = p.cuda.stepBlocks.value_or(kDefaultStepBlocks);
  p.cuda.stepBlocksPerSm = p.cuda.stepBlocksPerSm.value_or(1);
  p.cuda.stepWarps = p.cuda.stepWarps.value_or(7);
  resolveGeneration(p.generation, m);
  return p;
}

void applyProfile(const CompileProfile &p, Module &m) {
  PlanOptions o;
  o.maxBatch = *p.maxBatch;
  o.maxBeams = *p.maxBeams;
  o.maxLength = *p.maxLength;
  o.maxTokens = *p.maxTokens;
  o.maxSourceLength = p.maxSourceLength.value_or(0);
  o.maxNewTokens = p.maxNewTokens.value_or(0);
  o.activation = *parseDType(*p.dtype); // checked when the profile was resolved
  o.crossKvI8 = p.crossKvDtype == std::string("i8");
  if (p.weights) {
    o.weightBits = *p.weights == "int4" ? 4 : 8;
    o.groupSize = *p.groupSize;
    o.quantizeLmHead = *p.quantizeLmHead;
    o.weightsZeroPoint = *p.weightsZeroPoint;
  }
  o.nbitsAccuracyLevel = p.nbitsAccuracyLevel.value_or(-1);
  setPlanOptions(m, o);
  m.metadata()["plan.step_blocks"] = std::to_string(p.cuda.stepBlocks.value_or(kDefaultStepBlocks));
  m.metadata()["plan.step_blocks_per_sm"] = std::to_string(p.cuda.stepBlocksPerSm.value_or(1));
  m.metadata()["plan.step_warps"] = std::to_string(p.cuda.stepWarps.value_or(7));
  // Only values that differ from config.json's: the IR keeps the config's text.
  const GenerationDefaults &g = p.generation;
  if (g.eosTokenId && *g.eosTokenId != metadataInts(m, "config.eos_token_id")) {
    std::string list = "[";
    for (size_t i = 0; i < g.eosTokenId->size(); ++i)
      list += (i ? ", " : "") + std::to_string((*g.eosTokenId)[i]);
    m.metadata()["config.eos_token_id"] = list + "]";
  }
  auto set = [&](const std::optional<int64_t> &v, const char *key) {
    if (v && v != metadataInt(m, key))
      m.metadata()[key] = std::to_string(*v);
  };
  set(g.padTokenId, "config.pad_token_id");
  set(g.bosTokenId, "config.bos_token_id");
  set(g.decoderStartTokenId, "config.decoder_start_token_id");
}

AttentionKernelOptions attentionKernelOptions(const CompileProfile &p) {
  AttentionKernelOptions o; // every field set once the profile is resolved
  o.headsPerBlock = static_cast<int>(p.cuda.attentionHeadsPerBlock.value_or(o.headsPerBlock));
  o.stageKib = static_cast<int>(p.cuda.decodeStageKib.value_or(o.stageKib));
  o.decodeStream = p.cuda.decodeStream.value_or(o.decodeStream);
  o.trace = p.cuda.attentionTrace.value_or(o.trace);
  return o;
}

} // namespace genc
