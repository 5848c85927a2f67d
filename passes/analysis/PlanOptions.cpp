#include "passes/analysis/PlanOptions.h"

#include <cstdlib>

namespace genc {

static int64_t get(const Module &m, const char *key, int64_t dflt) {
  auto it = m.metadata().find(key);
  return it == m.metadata().end() ? dflt : std::atoll(it->second.c_str());
}

PlanOptions planOptions(const Module &m) {
  PlanOptions o;
  o.maxBatch = get(m, "plan.max_batch", o.maxBatch);
  o.maxBeams = get(m, "plan.max_beams", o.maxBeams);
  o.maxLength = get(m, "plan.max_length", o.maxLength);
  o.maxTokens = get(m, "plan.max_tokens", o.maxTokens);
  o.maxSourceLength = get(m, "plan.max_source_length", o.maxSourceLength);
  o.maxNewTokens = get(m, "plan.max_new_tokens", o.maxNewTokens);
  if (auto it = m.metadata().find("plan.cross_kv_dtype"); it != m.metadata().end())
    o.crossKvI8 = it->second == "i8";
  o.weightBits = get(m, "plan.weight_bits", o.weightBits);
  o.groupSize = get(m, "plan.group_size", o.groupSize);
  o.quantizeLmHead = get(m, "plan.quantize_lm_head", 0) != 0;
  o.weightsZeroPoint = get(m, "plan.weights_zero_point", 0) != 0;
  o.nbitsAccuracyLevel = get(m, "plan.nbits_accuracy_level", -1);
  if (auto it = m.metadata().find("plan.dtype"); it != m.metadata().end())
    if (auto dt = parseDType(it->second))
      o.activation = *dt;
  return o;
}

void setPlanOptions(Module &m, const PlanOptions &o) {
  m.metadata()["plan.max_batch"] = std::to_string(o.maxBatch);
  m.metadata()["plan.max_beams"] = std::to_string(o.maxBeams);
  m.metadata()["plan.max_length"] = std::to_string(o.maxLength);
  m.metadata()["plan.max_tokens"] = std::to_string(o.maxTokens);
  if (o.maxSourceLength > 0)
    m.metadata()["plan.max_source_length"] = std::to_string(o.maxSourceLength);
  if (o.maxNewTokens > 0)
    m.metadata()["plan.max_new_tokens"] = std::to_string(o.maxNewTokens);
  m.metadata()["plan.dtype"] = dtypeName(o.activation);
  if (o.crossKvI8)
    m.metadata()["plan.cross_kv_dtype"] = "i8";
  if (o.weightBits) {
    m.metadata()["plan.weight_bits"] = std::to_string(o.weightBits);
    m.metadata()["plan.group_size"] = std::to_string(o.groupSize);
    if (o.quantizeLmHead)
      m.metadata()["plan.quantize_lm_head"] = "1";
    if (o.weightsZeroPoint)
      m.metadata()["plan.weights_zero_point"] = "1";
  }
  if (o.nbitsAccuracyLevel >= 0)
    m.metadata()["plan.nbits_accuracy_level"] = std::to_string(o.nbitsAccuracyLevel);
}

} // namespace genc
