// The maximum shapes a plan is built for. genc's flags write them into the
// module's metadata (`plan.*`), so passes read them without extra plumbing.
#pragma once
#include "compiler/ir/IR.h"

#include <algorithm>

namespace genc {

struct PlanOptions {
  int64_t maxBatch = 8;    // sequences generated together
  int64_t maxBeams = 4;    // beams per sequence
  int64_t maxLength = 256; // prompt + new tokens per sequence (the decoder's, encoder-decoder)
  int64_t maxSourceLength = 0; // encoder-decoder: tokens per source (0: maxLength)
  int64_t maxTokens = 0;   // tokens per prefill forward (0: maxBatch * maxLength, at most 2048)
  int64_t maxNewTokens = 0; // tokens a beam generates past the prompt it shares (0: no sharing)
  DType activation = DType::F32; // storage of weights and float activations (--dtype)
  bool crossKvI8 = false;        // the cross-attention cache as i8 rows and scales (--cross-kv-dtype i8)
  // --weights int8|int4 (passes/QuantizeWeights.cpp): the matmul weights'
  // bits (0: as they are), codes per scale along K, the vocabulary
  // projection too, a zero point per group (else symmetric).
  int64_t weightBits = 0;
  int64_t groupSize = 32;
  bool quantizeLmHead = false;
  bool weightsZeroPoint = false;
  int64_t nbitsAccuracyLevel = -1; // every matmul_nbits' accuracy_level; -1: unset (0)
  int64_t slots() const { return maxBatch * maxBeams; }
  // Beams share their prompt's K/V (runtime/kv/KvLayout.h) when the plan
  // bounds what each generates below max_length.
  bool sharesPrompts() const { return maxBeams > 1 && maxNewTokens > 0 && maxNewTokens < maxLength; }
  // A source is encoded once per batch item while the decoder's cache is
  // one per beam: HF's max_length counts decoder tokens, and a summary of
  // 64 tokens from 1024 must not size 4 beams' caches for 1024.
  int64_t sourceLength() const { return maxSourceLength > 0 ? maxSourceLength : maxLength; }
  // Every position either side reaches: what position tables cover.
  int64_t positions() const { return std::max(maxLength, sourceLength()); }
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
