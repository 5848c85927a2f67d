// The decode-row kernels of MatmulNBits.h (internal): AVX-512 and AVX2 dot
// products of a few f32 rows with 4-bit / 8-bit columns widened in registers.
#pragma once
#include "runtime/cpu/MatmulNBits.h"

#include <immintrin.h>

namespace genrt::cpu {

/// A column's integer zero points: its packed row (null: the default),
/// block j's by the matrix's bits or by a compile-time BITS.
struct NBitsIntZeroPoints {
  const uint8_t *row;
  int32_t dflt;
  int bits;
  NBitsIntZeroPoints(const NBitsMatrix &w, int64_t n)
      : row(w.zeroPoints == ZeroPointKind::Packed ? w.zpPacked + n * w.shape.zeroPointBytes() : nullptr),
        dflt(w.shape.defaultZeroPoint()), bits(static_cast<int>(w.shape.bits)) {}
  int32_t at(int64_t j) const { return row ? nbitsPackedZeroPoint(row, j, bits) : dflt; }
  template <int BITS> int32_t at(int64_t j) const { return row ? nbitsPackedZeroPoint(row, j, BITS) : dflt; }
};

/// The sum of v's eight lanes (AVX: callable from the AVX2 and AVX-512 kernels).
__attribute__((target("avx"))) inline float nbitsHsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// The sum of v's eight 32-bit lanes (AVX2: callable from the AVX2 and
/// AVX-512 kernels).
__attribute__((target("avx2"))) inline int32_t nbitsHsumEpi32(__m256i v) {
  const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i h2 = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(h2, _mm_shuffle_epi32(h2, 0xB1)));
}

/// Columns the decode kernels prefetch ahead of the one they read.
constexpr int64_t kNBitsAhead = 8;

/// One column's codes and scales into the cache, a few columns ahead of its
/// use: plans map their weights from the file in 4 KiB pages, which the
/// hardware prefetchers do not cross.
inline void nbitsPrefetchColumn(const uint8_t *codes, const float *scales, int64_t codeBytes, int64_t blocks) {
  for (int64_t off = 0; off < codeBytes; off += 64)
    _mm_prefetch(reinterpret_cast<const char *>(codes + off), _MM_HINT_T0);
  for (int64_t off = 0; off < blocks * 4; off += 64)
    _mm_prefetch(reinterpret_cast<const char *>(scales) + off, _MM_HINT_T0);
}

/// Floats of one row as the kernels read it: K padded with zeros to whole blocks.
inline int64_t nbitsRowFloats(const NBitsShape &s) { return s.blocks() * s.blockSize; }

/// x[K] -> out[nbitsRowFloats]: 8 bits, x then zeros; 4 bits, each group of
/// 32 elements as its 16 even elements then its 16 odd ones (a byte's low
/// nibble is an even element, its high nibble the next), zeros past K. The
/// nibbles of 16 bytes then meet their elements in two plain vectors.
void arrangeNBitsRow(const NBitsShape &s, const float *x, float *out);

/// y[m, n] for m < M (<= 8), n in [n0, n1), x holding M arranged rows.
/// 4-bit matrices need block_size >= 32.
void nbitsRowsAvx512(const float *x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1);
void nbitsRowsAvx2(const float *x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1);

} // namespace genrt::cpu
