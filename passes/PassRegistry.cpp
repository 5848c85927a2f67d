#include "passes/PassRegistry.h"

#include "passes/Passes.h"

namespace genc {

const std::vector<PassInfo> &allPasses() {
  static const std::vector<PassInfo> passes = {
      {"infer-shapes", "infer result types with symbolic dims; unify equal symbols", inferShapesPass},
      {"fold-shapes", "fold shape arithmetic into constants and symbolic shape attributes",
       foldShapesPass},
      {"dce", "erase ops whose results are unused, and unused weights", dcePass},
      {"canonicalize", "drop no-ops; gemm -> matmul + add; recognise gelu, silu, rms_norm",
       canonicalizePass},
      {"raise-attention", "softmax(q.k^T*scale + mask).v -> attention, mask classified by evaluation",
       raiseAttentionPass},
      {"derive-plan", "split into @prefill / @decode_step with KV caches and position tables",
       derivePlanPass},
      {"quantize-weights", "--weights int8|int4: float matmul weights -> 8/4-bit blocks read by matmul_nbits",
       quantizeWeightsPass},
      {"fuse-gemms", "bias (+relu/tanh-gelu) into GEMM epilogues; QKV and gate/up GEMMs merged",
       fuseGemmsPass},
      {"fold-attention-io",
       "attention reads the packed QKV projection (RoPE inside) and writes [tokens, heads*dim]",
       foldAttentionIoPass},
      {"fuse", "elementwise/injective/norm chains between GEMMs and attention -> fused", fusePass},
      {"share-fused-bodies", "fused bodies that compute the same thing become one (one kernel per distinct body)",
       shareFusedBodiesPass},
      {"plan-memory", "liveness at the maximum shapes; one arena per function, greedy by size",
       planMemoryPass},
      {"schedule-step", "@decode_step as the work items of one persistent kernel: tiles, waits, blocks' lists",
       scheduleStepPass},
  };
  return passes;
}

const PassInfo *lookupPass(const std::string &name) {
  for (const auto &p : allPasses())
    if (name == p.name)
      return &p;
  return nullptr;
}

std::string knownPassNames() {
  std::string known;
  for (const auto &p : allPasses())
    known += std::string(known.empty() ? "" : ", ") + p.name;
  return known;
}

std::vector<std::string> graphPipeline() {
  std::vector<std::string> all = defaultPipeline(), graph;
  for (const auto &p : all) {
    if (p == "derive-plan")
      break;
    graph.push_back(p);
  }
  return graph;
}

std::vector<std::string> defaultPipeline() { return {"infer-shapes", "fold-shapes", "dce", "canonicalize", "raise-attention",
          "derive-plan", "quantize-weights", "fuse-gemms", "fold-attention-io", "fuse", "share-fused-bodies", "dce",
          "plan-memory", "schedule-step"}; }

} // namespace genc
