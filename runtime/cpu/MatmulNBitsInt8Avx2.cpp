// matmul_nbits' decode rows with 8-bit activations on AVX2 + FMA (CPUs
// without AVX-512 VNNI): the same integers as the plain loops and VNNI
// (MatmulNBitsInt8.h), through vpmaddubsw / vpmaddwd.
//
// Shapes: x.q [M, blocks * bs] int8, x.scale / x.sum [M, blocks], codes
// [N, blocks, blob] u8 (4-bit: two codes a byte, the even element low),
// scales [N, blocks] f32, zero points as NBitsLayout.h stores them, y [M, N].
//
// Three kernels: 4-bit blocks of 32 with x in pairs (pairsAvx2: two blocks'
// codes a 32-byte load), one row of anything else (rowAvx2), several rows of
// anything else (rowsAvx2).
#include "runtime/cpu/MatmulNBitsInt8.h"

#include "runtime/cpu/MatmulNBitsRows.h"

#include <algorithm>
#include <array>
#include <immintrin.h>

namespace genrt::cpu {
namespace {

#define GENC_AVX2 __attribute__((target("avx2,fma")))

// ---- 4-bit blocks of 32, x in pairs ------------------------------------------
// Pair p of a column (blocks 2p, 2p + 1) is 32 code bytes: their low
// nibbles are both blocks' even elements, the high ones their odd elements,
// as x holds them ([2p evens, 2p + 1 evens, 2p odds, 2p + 1 odds],
// Int8Rows::pairs). vpmaddubsw pairs each nibble vector with its 32 bytes of
// x (two products of at most 15 * 127 a 16-bit lane), the two added in 16
// bits (at most 4 * 15 * 127 = 7620) and widened once by vpmaddwd: lanes 0-3
// are block 2p's sums, lanes 4-7 block 2p + 1's. Four pairs (eight blocks)
// fold into one vector of eight block sums, so the zero points, the
// conversion and the multiply-add by s * sx run once for eight blocks. An
// odd block count's last block is unpaired ([evens, odds]).
// Eight lanes from p; those past `live` zero unless FULL.
template <bool FULL> GENC_AVX2 inline __m256 lanes(const float *p, __m256i live) {
  return FULL ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, live);
}
template <bool FULL> GENC_AVX2 inline __m256i lanes(const int32_t *p, __m256i live) {
  return FULL ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)) : _mm256_maskload_epi32(p, live);
}

// One column's eight blocks from j0 (FULL), or its last nb < 8.
template <int M, bool FZP, bool FULL>
GENC_AVX2 inline __attribute__((always_inline)) void pairGroup(const Int8Rows &x, const NBitsMatrix &w, int64_t n,
                                                               int64_t j0, int nb, __m256 (&acc)[M]) {
  if constexpr (FULL)
    nb = 8;
  const int64_t blocks = w.shape.blocks(), xr = x.rowBytes;
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); // the folded lanes are blocks 0 2 4 6 1 3 5 7
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(nb), iota);
  const uint8_t *c0 = w.codes + (n * blocks + j0) * 16;
  __m256i lo[4], hi[4];
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    if (2 * p + 1 < nb) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c0 + p * 32));
      lo[p] = _mm256_and_si256(v, low4);
      hi[p] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    } else {
      lo[p] = hi[p] = _mm256_setzero_si256();
    }
  }
  __m256i odd = _mm256_setzero_si256();
  if (!FULL && nb % 2) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(c0 + (nb - 1) * 16));
    odd = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(c, 4), c), low4);
  }
  __m256i z = _mm256_set1_epi32(w.shape.defaultZeroPoint());
  __m256 zf = _mm256_setzero_ps();
  if constexpr (FZP) {
    zf = lanes<FULL>(w.zpFloat + n * blocks + j0, live);
  } else if (w.zeroPoints == ZeroPointKind::Packed) {
    const NBitsIntZeroPoints zp(w, n);
    alignas(32) int32_t zs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int b = 0; b < nb; ++b)
      zs[b] = zp.at<4>(j0 + b);
    z = _mm256_load_si256(reinterpret_cast<const __m256i *>(zs));
  }
  const __m256 s = lanes<FULL>(w.scales + n * blocks + j0, live);
#pragma GCC unroll 8
  for (int m = 0; m < M; ++m) {
    const int8_t *xm = x.q.data() + m * xr + j0 * 32;
    __m256i P[4];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      if (2 * p + 1 < nb) {
        const __m256i e = _mm256_maddubs_epi16(lo[p], _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xm + p * 64)));
        const __m256i o =
            _mm256_maddubs_epi16(hi[p], _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xm + p * 64 + 32)));
        P[p] = _mm256_madd_epi16(_mm256_add_epi16(e, o), ones);
      } else {
        P[p] = _mm256_setzero_si256();
      }
    }
    __m256i dots = _mm256_permutevar8x32_epi32(
        _mm256_hadd_epi32(_mm256_hadd_epi32(P[0], P[1]), _mm256_hadd_epi32(P[2], P[3])), order);
    if (!FULL && nb % 2) {
      const __m256i d = _mm256_madd_epi16(
          _mm256_maddubs_epi16(odd, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xm + (nb - 1) * 32))), ones);
      const __m256i at = _mm256_cmpeq_epi32(iota, _mm256_set1_epi32(nb - 1));
      dots = _mm256_add_epi32(dots, _mm256_and_si256(_mm256_set1_epi32(nbitsHsumEpi32(d)), at));
    }
    const __m256i xsum = lanes<FULL>(x.sum.data() + m * blocks + j0, live);
    const __m256 f = _mm256_mul_ps(s, lanes<FULL>(x.scale.data() + m * blocks + j0, live));
    if constexpr (!FZP)
      dots = _mm256_sub_epi32(dots, _mm256_mullo_epi32(z, xsum));
    __m256 v = _mm256_cvtepi32_ps(dots);
    if constexpr (FZP)
      v = _mm256_fnmadd_ps(zf, _mm256_cvtepi32_ps(xsum), v);
    acc[m] = _mm256_fmadd_ps(v, f, acc[m]);
  }
}

template <int M, bool FZP>
GENC_AVX2 void pairsAvx2(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t n0, int64_t n1) {
  const int64_t blocks = w.shape.blocks(), N = w.shape.N;
  for (int64_t n = n0; n < n1; ++n) {
    if (n + kNBitsAhead < n1)
      nbitsPrefetchColumn(w.codes + (n + kNBitsAhead) * blocks * 16, w.scales + (n + kNBitsAhead) * blocks,
                          blocks * 16, blocks);
    __m256 acc[M];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      acc[m] = _mm256_setzero_ps();
    int64_t j0 = 0;
    for (; j0 + 8 <= blocks; j0 += 8)
      pairGroup<M, FZP, true>(x, w, n, j0, 8, acc);
    if (j0 < blocks)
      pairGroup<M, FZP, false>(x, w, n, j0, static_cast<int>(blocks - j0), acc);
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      y[m * N + n] = nbitsHsum256(acc[m]);
  }
}

// ---- Anything else: a group of 32 codes a step --------------------------------
// A group of 32 codes against 32 bytes of x a step. 4 bits: the 16 code
// bytes' low nibbles then their high ones as 32 unsigned bytes (x is
// arranged so: 16 even elements, 16 odd), vpmaddubsw pairing them with x
// (a pair of 15 * 127 products cannot saturate 16 bits), vpmaddwd summing
// pairs into 32-bit lanes. 8 bits: a pair of 255 * 127 products would
// saturate vpmaddubsw, so the codes are taken as q' = q - 128 (a flip of the
// top bit) and multiplied as |q'| (at most 128, unsigned) by x with q''s
// sign (x is within [-127, 127], so its negation is exact): a pair of
// products is at most 2 * 128 * 127 = 32512, and sum q x = sum q' x +
// 128 sum x. So the integer zero point enters lane 0 as (kBias - z) *
// sum(xq), a float one's sum gains 128 sum(xq); then one conversion and one
// multiply-add by s * sx a block and row, the lanes summed at the end.
template <int BITS> constexpr int32_t kBias = BITS == 8 ? 128 : 0;

// The 8-bit codes' q' = q - 128 as |q'| and x's 32 bytes with q''s sign:
// their vpmaddubsw is q' x (see above).
GENC_AVX2 inline __m256i signedCodes(const uint8_t *b) {
  return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(b)), _mm256_set1_epi8(char(0x80)));
}
GENC_AVX2 inline __m256i q8Dot(__m256i qs, const int8_t *xq) {
  const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(qs), _mm256_sign_epi8(xv, qs)), _mm256_set1_epi16(1));
}

template <int M, int BITS, bool FZP>
__attribute__((target("avx2,fma"))) void rowsAvx2(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t n0,
                                                  int64_t n1) {
  const int64_t bs = w.shape.blockSize, blocks = w.shape.blocks(), blob = w.shape.blobBytes(), N = w.shape.N;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  for (int64_t n = n0; n < n1; ++n) {
    if (n + kNBitsAhead < n1)
      nbitsPrefetchColumn(w.codes + (n + kNBitsAhead) * blocks * blob, w.scales + (n + kNBitsAhead) * blocks,
                          blocks * blob, blocks);
    const NBitsIntZeroPoints zp(w, n);
    __m256 acc[M];
    float side[M];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
      acc[m] = _mm256_setzero_ps();
      side[m] = 0.f;
    }
    for (int64_t j = 0; j < blocks; ++j) {
      const uint8_t *b = w.codes + (n * blocks + j) * blob;
      __m256i dot[M];
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m)
        dot[m] = _mm256_setzero_si256();
      for (int64_t g = 0; g < bs; g += 32) {
        if constexpr (BITS == 4) {
          const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + g / 2));
          const __m256i codes =
              _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(c, 4), nibble), _mm_and_si128(c, nibble));
#pragma GCC unroll 8
          for (int m = 0; m < M; ++m) {
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.q.data() + m * x.rowBytes + j * bs + g));
            dot[m] = _mm256_add_epi32(dot[m], _mm256_madd_epi16(_mm256_maddubs_epi16(codes, xv), ones));
          }
        } else {
          const __m256i qs = signedCodes(b + g);
#pragma GCC unroll 8
          for (int m = 0; m < M; ++m)
            dot[m] = _mm256_add_epi32(dot[m], q8Dot(qs, x.q.data() + m * x.rowBytes + j * bs + g));
        }
      }
      const float sw = w.scales[n * blocks + j];
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        const int32_t isum = x.sum[size_t(m * blocks + j)];
        __m256i d = dot[m];
        if constexpr (!FZP || BITS == 8)
          d = _mm256_add_epi32(d, _mm256_setr_epi32((kBias<BITS> - (FZP ? 0 : zp.at<BITS>(j))) * isum, 0, 0, 0, 0, 0, 0, 0));
        const float f = sw * x.scale[size_t(m * blocks + j)];
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(f), acc[m]);
        if constexpr (FZP)
          side[m] += f * w.zpFloat[n * blocks + j] * static_cast<float>(isum);
      }
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      y[m * N + n] = nbitsHsum256(acc[m]) - side[m];
  }
}

// One group of 32 codes (b) against 32 bytes of a row (xq): 8 lanes of
// 32-bit sums (8 bits: of q' x, see above).
template <int BITS>
__attribute__((target("avx2,fma"), always_inline)) inline __m256i groupDot(const uint8_t *b, const int8_t *xq) {
  if constexpr (BITS == 4) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(c, 4), nibble), _mm_and_si128(c, nibble));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq))),
                             _mm256_set1_epi16(1));
  } else {
    return q8Dot(signedCodes(b), xq);
  }
}

// One row (a decode step's): eight blocks' integer sums into one vector
// (three rounds of pairwise adds), so the zero points, the conversion and
// the multiply-add by s * sx run once for eight blocks, not once a block.
template <int BITS, bool FZP>
__attribute__((target("avx2,fma"))) void rowAvx2(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t n0,
                                                 int64_t n1) {
  const int64_t bs = w.shape.blockSize, blocks = w.shape.blocks(), blob = w.shape.blobBytes();
  const int64_t step = BITS == 4 ? 16 : 32; // code bytes a group of 32
  const int8_t *xq = x.q.data();
  for (int64_t n = n0; n < n1; ++n) {
    if (n + kNBitsAhead < n1)
      nbitsPrefetchColumn(w.codes + (n + kNBitsAhead) * blocks * blob, w.scales + (n + kNBitsAhead) * blocks,
                          blocks * blob, blocks);
    const NBitsIntZeroPoints zp(w, n);
    const uint8_t *codes = w.codes + n * blocks * blob;
    const float *sw = w.scales + n * blocks;
    __m256 acc = _mm256_setzero_ps(), side = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= blocks; j += 8) {
      __m256i d[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const uint8_t *b = codes + (j + i) * blob;
        const int8_t *xj = xq + (j + i) * bs;
        d[i] = groupDot<BITS>(b, xj);
        for (int64_t g = 32; g < bs; g += 32)
          d[i] = _mm256_add_epi32(d[i], groupDot<BITS>(b + g / 32 * step, xj + g));
      }
      const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
      const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(d[4], d[5]), _mm256_hadd_epi32(d[6], d[7]));
      __m256i dots = _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
      const __m256i isum = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.sum.data() + j));
      const __m256 f = _mm256_mul_ps(_mm256_loadu_ps(sw + j), _mm256_loadu_ps(x.scale.data() + j));
      if constexpr (FZP) {
        side = _mm256_fmadd_ps(_mm256_mul_ps(f, _mm256_loadu_ps(w.zpFloat + n * blocks + j)), _mm256_cvtepi32_ps(isum),
                               side);
        if constexpr (BITS == 8)
          dots = _mm256_add_epi32(dots, _mm256_slli_epi32(isum, 7)); // kBias * sum(xq)
      } else {
        const __m256i z = _mm256_setr_epi32(zp.at<BITS>(j), zp.at<BITS>(j + 1), zp.at<BITS>(j + 2), zp.at<BITS>(j + 3),
                                            zp.at<BITS>(j + 4), zp.at<BITS>(j + 5), zp.at<BITS>(j + 6),
                                            zp.at<BITS>(j + 7));
        dots = _mm256_sub_epi32(dots, _mm256_mullo_epi32(_mm256_sub_epi32(z, _mm256_set1_epi32(kBias<BITS>)), isum));
      }
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), f, acc);
    }
    float rest = 0.f, restSide = 0.f;
    for (; j < blocks; ++j) { // the last < 8 blocks one at a time
      const uint8_t *b = codes + j * blob;
      __m256i d = groupDot<BITS>(b, xq + j * bs);
      for (int64_t g = 32; g < bs; g += 32)
        d = _mm256_add_epi32(d, groupDot<BITS>(b + g / 32 * step, xq + j * bs + g));
      const int32_t isum = x.sum[size_t(j)];
      const __m256 dv = _mm256_cvtepi32_ps(d);
      const float f = sw[j] * x.scale[size_t(j)];
      const int32_t dz = (kBias<BITS> - (FZP ? 0 : zp.at<BITS>(j))) * isum;
      rest += (nbitsHsum256(dv) + static_cast<float>(dz)) * f;
      if constexpr (FZP)
        restSide += f * w.zpFloat[n * blocks + j] * static_cast<float>(isum);
    }
    y[n] = nbitsHsum256(acc) + rest - (FZP ? nbitsHsum256(side) + restSide : 0.f);
  }
}

using Fn = void (*)(const Int8Rows &, const NBitsMatrix &, float *, int64_t, int64_t);

template <int BITS, bool FZP> constexpr std::array<Fn, 8> byRowsAvx2() {
  return {rowAvx2<BITS, FZP>, rowsAvx2<2, BITS, FZP>, rowsAvx2<3, BITS, FZP>, rowsAvx2<4, BITS, FZP>,
          rowsAvx2<5, BITS, FZP>, rowsAvx2<6, BITS, FZP>, rowsAvx2<7, BITS, FZP>, rowsAvx2<8, BITS, FZP>};
}
template <bool FZP> constexpr std::array<Fn, 8> byRowsPairs() {
  return {pairsAvx2<1, FZP>, pairsAvx2<2, FZP>, pairsAvx2<3, FZP>, pairsAvx2<4, FZP>,
          pairsAvx2<5, FZP>, pairsAvx2<6, FZP>, pairsAvx2<7, FZP>, pairsAvx2<8, FZP>};
}

} // namespace

bool cpuHasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

void nbitsInt8RowsAvx2(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1) {
  const bool fzp = w.zeroPoints == ZeroPointKind::Float;
  if (x.pairs) {
    static const std::array<Fn, 8> p[2] = {byRowsPairs<false>(), byRowsPairs<true>()};
    p[fzp][M - 1](x, w, y, n0, n1);
    return;
  }
  static const std::array<Fn, 8> t[2][2] = {{byRowsAvx2<4, false>(), byRowsAvx2<4, true>()},
                                            {byRowsAvx2<8, false>(), byRowsAvx2<8, true>()}};
  t[w.shape.bits == 8][fzp][M - 1](x, w, y, n0, n1);
}

} // namespace genrt::cpu
