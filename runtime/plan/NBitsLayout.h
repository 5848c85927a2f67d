// The layout of a weight-only quantized matrix, `matmul_nbits(a, b, scales
// [, zero_points]) {bits, block_size, n}` (docs/ir-ops.md, docs/quantization.md):
// one set of facts for the ONNX importer, genc's quantizer, shape
// inference, the plan verifier and the kernels.
//
// W is K x N, quantized along K in blocks of `block_size` per column n:
//   b            u8 [N, blocks, blob]   blob = block_size * bits / 8; 4 bits:
//                element 2i of a block in the low nibble of byte i, 2i + 1
//                in the high one (ONNX Runtime's MatMulNBits); 8 bits: a byte each
//   scales       f32 | f16 | bf16 [N, blocks]
//   zero_points  absent: 2^(bits - 1) (8 or 128); or
//                u8 [N, ceil(blocks * bits / 8)], packed like b along the
//                blocks (4 bits: block 2j low nibble, 2j + 1 high); or
//                float [N, blocks] (the scales' dtype)
//   W[k, n] = (q - z) * s, evaluated in f32, with q the code of element k of
//   column n, s and z those of its block; codes past K in the last block are
//   padding and never read.
#pragma once
#include "runtime/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace genrt {

enum class ZeroPointKind : uint8_t { Default, Packed, Float };

struct NBitsShape {
  int64_t bits = 4, blockSize = 32, K = 0, N = 0;
  int64_t blocks() const { return (K + blockSize - 1) / blockSize; }
  int64_t blobBytes() const { return blockSize * bits / 8; }
  /// Bytes of one column's packed integer zero points.
  int64_t zeroPointBytes() const { return (blocks() * bits + 7) / 8; }
  int32_t defaultZeroPoint() const { return 1 << (bits - 1); }
};

/// Bounds beyond any model genc serves, so that products of them stay far
/// inside int64 (a plan is untrusted input).
constexpr int64_t kMaxNBitsDim = int64_t(1) << 24;
constexpr int64_t kMaxNBitsBlock = 4096;

/// "" when bits is 4 or 8, block_size a power of two in [16, 4096] and K, N
/// in [1, 2^24]; else why not, naming the attribute.
inline std::string checkNBitsShape(const NBitsShape &s) {
  if (s.bits != 4 && s.bits != 8)
    return "bits = " + std::to_string(s.bits) + " is not supported (4 or 8)";
  if (s.blockSize < 16 || s.blockSize > kMaxNBitsBlock || (s.blockSize & (s.blockSize - 1)))
    return "block_size = " + std::to_string(s.blockSize) + " is not a power of two from 16 to " +
           std::to_string(kMaxNBitsBlock);
  if (s.K < 1 || s.K > kMaxNBitsDim)
    return "K = " + std::to_string(s.K) + " is outside 1.." + std::to_string(kMaxNBitsDim);
  if (s.N < 1 || s.N > kMaxNBitsDim)
    return "N = " + std::to_string(s.N) + " is outside 1.." + std::to_string(kMaxNBitsDim);
  return "";
}

inline std::string nbitsShapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// Checks the operands' dtypes and shapes against `s` (checked first with
/// checkNBitsShape) and says which zero points they hold. "" or the reason,
/// naming the operand.
inline std::string checkNBitsOperands(const NBitsShape &s, DType bType, const std::vector<int64_t> &bShape,
                                      DType scaleType, const std::vector<int64_t> &scaleShape, bool hasZeroPoints,
                                      DType zpType, const std::vector<int64_t> &zpShape, ZeroPointKind &kind) {
  const std::vector<int64_t> wantB = {s.N, s.blocks(), s.blobBytes()}, wantS = {s.N, s.blocks()};
  if (bType != DType::U8 || bShape != wantB)
    return std::string("b is ") + dtypeName(bType) + nbitsShapeStr(bShape) + ", expected u8" + nbitsShapeStr(wantB);
  if ((scaleType != DType::F32 && scaleType != DType::F16 && scaleType != DType::BF16) || scaleShape != wantS)
    return std::string("scales are ") + dtypeName(scaleType) + nbitsShapeStr(scaleShape) + ", expected f32, f16 or bf16" +
           nbitsShapeStr(wantS);
  kind = ZeroPointKind::Default;
  if (!hasZeroPoints)
    return "";
  if (zpType == DType::U8) {
    const std::vector<int64_t> want = {s.N, s.zeroPointBytes()};
    if (zpShape != want)
      return "packed zero_points are u8" + nbitsShapeStr(zpShape) + ", expected u8" + nbitsShapeStr(want);
    kind = ZeroPointKind::Packed;
    return "";
  }
  if (zpType != scaleType || zpShape != wantS)
    return std::string("zero_points are ") + dtypeName(zpType) + nbitsShapeStr(zpShape) + ", expected u8" +
           nbitsShapeStr({s.N, s.zeroPointBytes()}) + " or " + dtypeName(scaleType) + nbitsShapeStr(wantS);
  kind = ZeroPointKind::Float;
  return "";
}

/// Code of element i (0 <= i < block_size) of a block's blob.
inline int32_t nbitsCode(const uint8_t *blob, int64_t i, int64_t bits) {
  return bits == 8 ? blob[i] : (blob[i >> 1] >> ((i & 1) * 4)) & 0xF;
}

/// The packed integer zero point of block j of a column.
inline int32_t nbitsPackedZeroPoint(const uint8_t *row, int64_t j, int64_t bits) {
  return bits == 8 ? row[j] : (row[j >> 1] >> ((j & 1) * 4)) & 0xF;
}

} // namespace genrt
