// Bounds on a plan's size fields, beyond any model genc serves, so that
// every product the runtime forms from them (cache and workspace sizes,
// staging buffers, logits) stays far inside int64 (a plan is untrusted
// input). The largest such product, the CUDA executor's attention scratch
// (tokens x (heads + 2 kv heads) x head_dim x 4 bytes), is below 2^53.
#pragma once
#include <cstdint>

namespace genrt {

constexpr int64_t kMaxVocab = int64_t(1) << 24;   // 16M token ids
constexpr int64_t kMaxSlots = int64_t(1) << 16;   // max_batch x max_beams
constexpr int64_t kMaxLength = int64_t(1) << 24;  // positions per sequence
constexpr int64_t kMaxSymbol = int64_t(1) << 24;  // tokens, rows, src_tokens per run
constexpr int64_t kMaxHeads = int64_t(1) << 12;
constexpr int64_t kMaxHeadDim = int64_t(1) << 12;
constexpr int64_t kMaxLayers = int64_t(1) << 12;
constexpr int64_t kMaxArenaBytes = int64_t(1) << 48; // 256 TiB

} // namespace genrt
