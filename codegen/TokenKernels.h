// Token-choice kernels (runtime/cuda/TokenAbi.h): greedy search's argmax and
// log-softmax on the device, so a decode step returns token ids, not logits.
// Emitted into every plan that has GPU kernels; they depend on nothing of
// the model but the logits' f32 rows.
#pragma once

namespace genc {

/// The ABI struct and the kernels' source (no prelude).
const char *tokenKernelsSource();
/// Their entry points.
inline const char *const kTokenKernelNames[] = {"genc_greedy"};

} // namespace genc
