// Round-to-nearest block quantization of a float matrix into the layout of
// runtime/plan/NBitsLayout.h (what `genc compile --weights int8|int4` writes).
//
// Per column n and block of `block_size` rows along K:
//   symmetric (default): 4 bits as llama.cpp's Q4_0 — the element of largest
//     magnitude v maps to -8 exactly (s = v / -8), codes rint(w / s) in
//     [-8, 7] + 8; 8 bits as Q8_0 — s = max|w| / 127, codes in [-127, 127]
//     + 128. The zero point is the default (8, 128): no zero-point tensor.
//   with a zero point: min and max of the block and 0 (as ONNX Runtime's
//     quantizer: 0 stays a code), s = (max - min) / (2^bits - 1), z =
//     rint(-min / s), codes rint(w / s) + z clamped to [0, 2^bits - 1]; a
//     block of one repeated value v keeps it as s = v, z = 0, codes 1.
// The scale is rounded to f16 first and the codes computed with the rounded
// scale, so dequantization uses exactly the scale that was stored. Scales
// are f16 unless some block's scale is outside f16's normal range, then f32.
// Padding codes past K (the last block) dequantize to 0.
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/plan/NBitsLayout.h"

#include <memory>
#include <string>

namespace genc {

struct NBitsWeights {
  std::shared_ptr<Tensor> codes, scales, zeroPoints; // zeroPoints null when symmetric
};

/// Quantizes w, a float tensor [K, N] (or [N, K] when `transposed`) into
/// shape `s` (s.K, s.N its dims). Fails (a message) on a non-finite weight.
std::string quantizeNBits(const Tensor &w, bool transposed, const genrt::NBitsShape &s, bool zeroPoint,
                          NBitsWeights &out);

} // namespace genc
