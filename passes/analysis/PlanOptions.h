// The maximum shapes a plan is built for. genc's flags write them into the
// module's metadata (`plan.*`), so passes read them without extra plumbing.
#pragma once
#include "compiler/ir/IR.h"

#include <algorithm>

namespace genc {

struct PlanOptions {
  int64_t maxBatch = 8;    // sequences generated together
  int64_t maxBeams = 4;    // beams per sequence
  int64_t maxLength = 256; // prompt + new tokens per sequence
  int64_t maxTokens = 0;   // tokens per prefill forward (0: maxBatch * maxLength, at most 2048)
  DType activation = DType::F32; // storage of weights and float activations (--dtype)
  int64_t slots() const { return maxBatch * maxBeams; }
  // A chunk of 2048 tokens keeps the GEMMs efficient; sizing the prefill
  // arena for every sequence at full length would cost gigabytes for real
  // widths (Llama d=2048: 1.2 GB at 16384 tokens).
  int64_t prefillTokens() const {
    return maxTokens ? maxTokens : std::min<int64_t>(maxBatch * maxLength, 2048);
  }
};

PlanOptions planOptions(const Module &m);
void setPlanOptions(Module &m, const PlanOptions &o);

} // namespace genc
