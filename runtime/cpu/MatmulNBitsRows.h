// The decode-row kernels of MatmulNBits.h (internal): AVX-512 and AVX2 dot
// products of a few f32 rows with 4-bit / 8-bit columns widened in registers.
#pragma once
#include "runtime/cpu/MatmulNBits.h"

namespace genrt::cpu {

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
/// dequantizeNBits in AVX-512 (the same values); 4-bit matrices need block_size >= 32.
void nbitsDequantAvx512(const NBitsMatrix &w, int64_t n0, int64_t n1, float *out);
void nbitsRowsAvx2(const float *x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1);

} // namespace genrt::cpu
