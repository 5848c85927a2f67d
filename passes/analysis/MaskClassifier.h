// Classifies an additive attention mask by evaluation.
//
// The exporters build the same mask in very different ways (legacy: triu of a
// min-filled matrix plus an expanded padding mask; dynamo: arange compares,
// GatherND, where). Rather than matching those graphs, we run the mask in the
// interpreter on probe inputs and decide which of our mask kinds it equals:
// causal or not, a sliding window, key padding from an attention_mask argument.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace genc {

struct MaskKind {
  bool causal = false;
  int64_t window = 0;      // 0: none
  std::string keyPadding;  // name of the mask argument, or empty
  /// A bias added to the allowed scores that depends only on the head and
  /// the relative distance j - i (T5's bucketed relative position bias):
  /// f32 [heads or 1, 2 * maxDistance - 1], entry [h, j - i + maxDistance - 1].
  /// Null when the allowed scores get nothing added.
  std::shared_ptr<Tensor> relativeBias;
  int64_t maxDistance = 0;
  std::string describe() const;
};

/// `mask` is the additive term in softmax(q·kᵀ·scale + mask), broadcastable
/// to [batch, heads, sq, sk]. `windowHint` (e.g. config.json's
/// sliding_window) makes the probes long enough to see the window. A
/// relative-position bias is tabulated for distances below `maxLength`.
llvm::Expected<MaskKind> classifyMask(Module &m, Function &f, const Value *mask,
                                      int64_t windowHint, int64_t maxLength);

} // namespace genc
