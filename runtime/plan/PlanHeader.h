// The fixed header of a .plan file (runtime/plan/PlanFormat.h), read and checked
// in one place for the plan loader and the tokenizer reader.
#pragma once
#include "runtime/plan/PlanFormat.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace genrt {

struct PlanHeader {
  uint64_t jsonOffset = 0, jsonBytes = 0, blobOffset = 0, blobBytes = 0;
};

/// Checks magic, version and that both sections lie inside a file of
/// `fileBytes` bytes; `p` holds the first kPlanHeaderBytes bytes. On failure
/// returns the reason (empty on success).
inline std::string readPlanHeader(const uint8_t *p, uint64_t fileBytes, PlanHeader &h) {
  if (fileBytes < kPlanHeaderBytes)
    return "too small to be a plan (" + std::to_string(fileBytes) + " bytes)";
  if (std::memcmp(p, kPlanMagic, 8) != 0)
    return "not a genc plan (bad magic)";
  uint32_t version;
  std::memcpy(&version, p + 8, 4);
  if (version != kPlanFormatVersion)
    return "plan format version " + std::to_string(version) + ", this runtime reads version " +
           std::to_string(kPlanFormatVersion) + "; recompile the model with a matching genc";
  std::memcpy(&h.jsonOffset, p + 16, 8);
  std::memcpy(&h.jsonBytes, p + 24, 8);
  std::memcpy(&h.blobOffset, p + 32, 8);
  std::memcpy(&h.blobBytes, p + 40, 8);
  auto inFile = [&](uint64_t off, uint64_t n) { return off <= fileBytes && n <= fileBytes - off; };
  if (!inFile(h.jsonOffset, h.jsonBytes) || !inFile(h.blobOffset, h.blobBytes))
    return "header offsets point outside the file (truncated?)";
  // Every weight's alignment is relative to the blob: an edited header that
  // moves it would misalign them all.
  if (h.blobOffset % kPlanAlignment)
    return "the data blob is not " + std::to_string(kPlanAlignment) + "-byte aligned in the file";
  return "";
}

} // namespace genrt
