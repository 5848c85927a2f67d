// The AVX-512 and AVX2 decode-row kernels of matmul_nbits (MatmulNBitsRows.h).
//
// Shapes: x [M, blocks * block_size] (rows arranged by arrangeNBitsRow),
// codes [N, blocks, blob] u8, scales [N, blocks] f32, zero points
// [N, zeroPointBytes] u8 or [N, blocks] f32, y [M, N].
//
// A column's blocks stream in order, 16 code bytes a load (a 4-bit block
// of 32, or 16 codes of an 8-bit block), widened to 32-bit lanes, the zero
// point subtracted (as integers, or in f32 for float zero points),
// converted and multiplied by the block's scale — the dequantized weight of
// MatmulNBits.h to the bit — then one fused multiply-add per row into that
// row's accumulators, so each code is widened once for all M rows. AVX-512
// looks 4-bit codes up in a table of the block's 16 dequantized values
// instead, and multiplies 8-bit blocks' partial sums of (q - z) · a by the
// scale once; with one or two rows it runs two columns at a time.
// The column's sum is the accumulators' reduction (the order the header
// leaves unspecified).
//
// No VNNI: its integer dot products take 8-bit activations, and the
// activations here stay f32 (quantizing them would change the numbers the
// f32 reference and Hugging Face compute).
#include "runtime/cpu/MatmulNBitsRows.h"

// GCC 12's intrinsic headers pass an undefined vector as the masked form's
// source, which -Wmaybe-uninitialized reports once inlined (a known false
// positive, as in MatmulPanels.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <array>
#include <immintrin.h>

namespace genrt::cpu {

void arrangeNBitsRow(const NBitsShape &s, const float *x, float *out) {
  const int64_t total = nbitsRowFloats(s), K = s.K;
  auto at = [&](int64_t k) { return k < K ? x[k] : 0.f; };
  if (s.bits == 8) {
    for (int64_t k = 0; k < total; ++k)
      out[k] = at(k);
    return;
  }
  for (int64_t g = 0; g < total; g += 32)
    for (int64_t i = 0; i < 16; ++i) {
      out[g + i] = at(g + 2 * i);
      out[g + 16 + i] = at(g + 2 * i + 1);
    }
}

namespace {

// ---- AVX-512: 16 lanes ---------------------------------------------------------

constexpr int64_t kPrefetchColumns = 8;

template <bool FZP>
__attribute__((target("avx512f"), always_inline)) inline __m512 dequant512(__m512i q, __m512i zi, __m512 zf,
                                                                             __m512 s) {
  if constexpr (FZP)
    return _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q), zf), s);
  else
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(q, zi)), s);
}

// 4-bit codes index a table of the block's 16 dequantized values,
// table[i] = (i - z) * s — the same f32 arithmetic as dequant512 gives the
// code i — with one permute a vector (vpermps reads an index's low 4 bits:
// the low nibble of a widened byte directly, the high one after a shift).
template <bool FZP>
__attribute__((target("avx512f"), always_inline)) inline __m512 table512(__m512i zi, __m512 zf, __m512 s) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return dequant512<FZP>(iota, zi, zf, s);
}

// Columns n .. n + C - 1 together: with one or two rows, a column alone
// would wait on a multiply-add's latency every 32 codes; C columns give C
// times the independent accumulators (their indexes stay compile-time
// constants, so they live in registers).
template <int M, int BITS, bool FZP, int C>
__attribute__((target("avx512f"), always_inline)) inline void columns512(const float *x, const NBitsMatrix &w,
                                                                          float *y, int64_t n) {
  const int64_t bs = w.shape.blockSize, blocks = w.shape.blocks(), blob = w.shape.blobBytes(), N = w.shape.N;
  const int64_t xs = blocks * bs; // an arranged row
  const uint8_t *codes[C];
  const float *sc[C], *zfs[C];
  const NBitsIntZeroPoints *zps[C];
  NBitsIntZeroPoints zp0(w, n), zp1(w, n + C - 1);
  __m512 acc[C][M][2];
  const __m512 base8 = table512<false>(_mm512_set1_epi32(8), _mm512_setzero_ps(), _mm512_set1_ps(1.f));
  for (int c = 0; c < C; ++c) {
    codes[c] = w.codes + (n + c) * blocks * blob;
    sc[c] = w.scales + (n + c) * blocks;
    zfs[c] = FZP ? w.zpFloat + (n + c) * blocks : nullptr;
    zps[c] = c ? &zp1 : &zp0;
    for (int m = 0; m < M; ++m)
      acc[c][m][0] = acc[c][m][1] = _mm512_setzero_ps();
  }
  // The codes and scales a few columns on: plans map their weights from the
  // file in 4 KiB pages, which the hardware prefetchers do not cross.
  for (int c = 0; c < C; ++c) {
    for (int64_t off = 0; off < blocks * blob; off += 64)
      _mm_prefetch(reinterpret_cast<const char *>(codes[c] + kPrefetchColumns * blocks * blob + off), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(sc[c] + kPrefetchColumns * blocks), _MM_HINT_T0);
  }
  for (int64_t j = 0; j < blocks; ++j) {
    __m512 s[C], zf[C];
    __m512i zi[C];
    for (int c = 0; c < C; ++c) {
      s[c] = _mm512_set1_ps(sc[c][j]);
      zf[c] = _mm512_set1_ps(FZP ? zfs[c][j] : 0.f);
      zi[c] = _mm512_set1_epi32(FZP ? 0 : zps[c]->template at<BITS>(j));
    }
    const float *xj = x + j * bs;
    if constexpr (BITS == 4) {
      __m512 table[C];
      for (int c = 0; c < C; ++c) // the default zero point's (i - 8) once, not a block
        table[c] = FZP || zps[c]->row ? table512<FZP>(zi[c], zf[c], s[c]) : _mm512_mul_ps(base8, s[c]);
      for (int64_t g = 0; g < bs; g += 32)
        for (int c = 0; c < C; ++c) {
          const __m512i v =
              _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(codes[c] + j * blob + g / 2)));
          const __m512 lo = _mm512_permutexvar_ps(v, table[c]);
          const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table[c]);
          for (int m = 0; m < M; ++m) {
            acc[c][m][0] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xj + m * xs + g), acc[c][m][0]);
            acc[c][m][1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xj + m * xs + g + 16), acc[c][m][1]);
          }
        }
    } else {
      // 8 bits: (q - z) per code, the block's scale once on its partial
      // sums (a multiply a vector fewer than dequantizing every code).
      __m512 part[C][M][2];
      for (int c = 0; c < C; ++c)
        for (int m = 0; m < M; ++m)
          part[c][m][0] = part[c][m][1] = _mm512_setzero_ps();
      for (int64_t g = 0; g < bs; g += 32)
        for (int c = 0; c < C; ++c)
          for (int h = 0; h < 2; ++h) { // blocks are multiples of 16 codes; of 32 but for block_size 16
            if (g + 16 * h >= bs)
              break;
            const __m512i v = _mm512_cvtepu8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i *>(codes[c] + j * blob + g + 16 * h)));
            const __m512 q = FZP ? _mm512_sub_ps(_mm512_cvtepi32_ps(v), zf[c])
                                 : _mm512_cvtepi32_ps(_mm512_sub_epi32(v, zi[c]));
            for (int m = 0; m < M; ++m)
              part[c][m][h] = _mm512_fmadd_ps(q, _mm512_loadu_ps(xj + m * xs + g + 16 * h), part[c][m][h]);
          }
      for (int c = 0; c < C; ++c)
        for (int m = 0; m < M; ++m)
          for (int h = 0; h < 2; ++h)
            acc[c][m][h] = _mm512_fmadd_ps(s[c], part[c][m][h], acc[c][m][h]);
    }
  }
  for (int c = 0; c < C; ++c)
    for (int m = 0; m < M; ++m)
      y[m * N + n + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[c][m][0], acc[c][m][1]));
}

template <int M, int BITS, bool FZP>
__attribute__((target("avx512f"))) void rows512(const float *x, const NBitsMatrix &w, float *y, int64_t n0,
                                                int64_t n1) {
  constexpr int C = M <= 2 ? 2 : 1;
  int64_t n = n0;
  for (; n + C <= n1; n += C)
    columns512<M, BITS, FZP, C>(x, w, y, n);
  for (; n < n1; ++n)
    columns512<M, BITS, FZP, 1>(x, w, y, n);
}

// ---- AVX2 + FMA: 8 lanes ---------------------------------------------------------

template <bool FZP>
__attribute__((target("avx2,fma"), always_inline)) inline __m256 dequant256(__m256i q, __m256i zi, __m256 zf,
                                                                              __m256 s) {
  if constexpr (FZP)
    return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(q), zf), s);
  else
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, zi)), s);
}

// One column for rows 0 .. R - 1 of x (R <= 4): two accumulators a row
// whatever R (the same sum order for every batch size: a row's numbers do
// not depend on the rows beside it), four rows at most a call so that the
// accumulators and the widened codes stay in the 16 registers.
template <int R, int BITS, bool FZP>
__attribute__((target("avx2,fma"), always_inline)) inline void column256(const float *x, int64_t xs, const NBitsMatrix &w,
                                                                          const NBitsIntZeroPoints &zps, int64_t n, float *y) {
  const int64_t bs = w.shape.blockSize, blocks = w.shape.blocks(), blob = w.shape.blobBytes(), N = w.shape.N;
  const __m256i nibble = _mm256_set1_epi32(0xF);
  const uint8_t *codes = w.codes + n * blocks * blob;
  const float *sc = w.scales + n * blocks;
  const float *zfs = FZP ? w.zpFloat + n * blocks : nullptr;
  __m256 acc[R][2];
  for (int m = 0; m < R; ++m)
    acc[m][0] = acc[m][1] = _mm256_setzero_ps();
  for (int64_t j = 0; j < blocks; ++j) {
    const __m256 s = _mm256_set1_ps(sc[j]);
    const __m256 zf = _mm256_set1_ps(FZP ? zfs[j] : 0.f);
    const __m256i zi = _mm256_set1_epi32(FZP ? 0 : zps.at<BITS>(j));
    const uint8_t *b = codes + j * blob;
    const float *xj = x + j * bs;
    // 16 code bytes widened in two halves of 8.
    for (int64_t g = 0; g < bs; g += BITS == 4 ? 32 : 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + (BITS == 4 ? g / 2 : g)));
      const __m256i v0 = _mm256_cvtepu8_epi32(bytes), v1 = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
      if constexpr (BITS == 4) {
        const __m256 w0 = dequant256<FZP>(_mm256_and_si256(v0, nibble), zi, zf, s);
        const __m256 w1 = dequant256<FZP>(_mm256_and_si256(v1, nibble), zi, zf, s);
        const __m256 w2 = dequant256<FZP>(_mm256_srli_epi32(v0, 4), zi, zf, s);
        const __m256 w3 = dequant256<FZP>(_mm256_srli_epi32(v1, 4), zi, zf, s);
        for (int m = 0; m < R; ++m) {
          const float *xm = xj + m * xs + g;
          acc[m][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xm), acc[m][0]);
          acc[m][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xm + 8), acc[m][1]);
          acc[m][0] = _mm256_fmadd_ps(w2, _mm256_loadu_ps(xm + 16), acc[m][0]);
          acc[m][1] = _mm256_fmadd_ps(w3, _mm256_loadu_ps(xm + 24), acc[m][1]);
        }
      } else {
        const __m256 w0 = dequant256<FZP>(v0, zi, zf, s), w1 = dequant256<FZP>(v1, zi, zf, s);
        for (int m = 0; m < R; ++m) {
          const float *xm = xj + m * xs + g;
          acc[m][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xm), acc[m][0]);
          acc[m][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xm + 8), acc[m][1]);
        }
      }
    }
  }
  for (int m = 0; m < R; ++m)
    y[m * N + n] = nbitsHsum256(_mm256_add_ps(acc[m][0], acc[m][1]));
}

template <int M, int BITS, bool FZP>
__attribute__((target("avx2,fma"))) void rows256(const float *x, const NBitsMatrix &w, float *y, int64_t n0,
                                                 int64_t n1) {
  const int64_t xs = w.shape.blocks() * w.shape.blockSize; // an arranged row
  for (int64_t n = n0; n < n1; ++n) {
    const NBitsIntZeroPoints zps(w, n);
    column256<(M < 4 ? M : 4), BITS, FZP>(x, xs, w, zps, n, y);
    if constexpr (M > 4) // rows 4 .. M - 1 over the same column, its codes still in L1
      column256<M - 4, BITS, FZP>(x + 4 * xs, xs, w, zps, n, y + 4 * w.shape.N);
  }
}

using RowsFn = void (*)(const float *, const NBitsMatrix &, float *, int64_t, int64_t);

// The kernel for a matrix's bits and zero points and M rows.
template <int M, int BITS, bool FZP> struct Avx512Fn {
  static constexpr RowsFn fn = rows512<M, BITS, FZP>;
};
template <int M, int BITS, bool FZP> struct Avx2Fn {
  static constexpr RowsFn fn = rows256<M, BITS, FZP>;
};

template <template <int, int, bool> class F, int BITS, bool FZP> constexpr std::array<RowsFn, 8> byRows() {
  return {F<1, BITS, FZP>::fn, F<2, BITS, FZP>::fn, F<3, BITS, FZP>::fn, F<4, BITS, FZP>::fn,
          F<5, BITS, FZP>::fn, F<6, BITS, FZP>::fn, F<7, BITS, FZP>::fn, F<8, BITS, FZP>::fn};
}

template <template <int, int, bool> class F>
RowsFn pick(const NBitsMatrix &w, int64_t M) {
  static const std::array<RowsFn, 8> t[2][2] = {{byRows<F, 4, false>(), byRows<F, 4, true>()},
                                                {byRows<F, 8, false>(), byRows<F, 8, true>()}};
  return t[w.shape.bits == 8][w.zeroPoints == ZeroPointKind::Float][M - 1];
}

} // namespace

void nbitsRowsAvx512(const float *x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1) {
  pick<Avx512Fn>(w, M)(x, w, y, n0, n1);
}

void nbitsRowsAvx2(const float *x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1) {
  pick<Avx2Fn>(w, M)(x, w, y, n0, n1);
}

} // namespace genrt::cpu
