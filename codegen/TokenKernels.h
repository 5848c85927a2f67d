// Token-choice kernels (runtime/cuda/TokenAbi.h): greedy search's argmax and
// log-softmax and beam search's candidates on the device, so a decode step
// returns token ids (and scores), not logits.
// Emitted into every plan that has GPU kernels; they depend on nothing of
// the model but the logits' f32 rows.
#pragma once

namespace genc {

/// The ABI struct and the kernels' source (no prelude).
const char *tokenKernelsSource();
/// Their entry points.
inline const char *const kTokenKernelNames[] = {"genc_greedy", "genc_beam_norm", "genc_beam_topk", "genc_kv_copy"};

} // namespace genc
