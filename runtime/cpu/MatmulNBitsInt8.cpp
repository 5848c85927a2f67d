// matmul_nbits' decode rows with 8-bit activations (MatmulNBitsInt8.h).
//
// Shapes: x.q [M, blocks * bs] int8, x.scale / x.sum [M, blocks], codes
// [N, blocks, blob] u8 (4-bit: two codes a byte, the even element low),
// scales [N, blocks] f32, zero points as NBitsLayout.h stores them, y [M, N].
//
// AVX2 (CPUs without VNNI): vpmaddubsw / vpmaddwd, the same integers
// (MatmulNBitsInt8Avx2.cpp).
//
// VNNI: a block's 32 codes a step as 32 unsigned bytes (4-bit: the low
// nibbles of 16 bytes, then their high nibbles, meeting x's even then odd
// elements) against 32 signed bytes of x, vpdpbusd summing four products a
// 32-bit lane; the integer zero point enters the same lanes as -z * sum(xq)
// (exact), a float one as a product on the side. Then one conversion and one
// multiply-add by s * sx a block and row.
#include "runtime/cpu/MatmulNBitsInt8.h"

#include "runtime/cpu/MatmulNBitsRows.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <limits>

namespace genrt::cpu {

namespace {
// 4-bit blocks of 16 hold half a group of 32: their rows stay in order, a
// code byte's two nibbles meeting elements 2i and 2i + 1.
bool paired(const NBitsShape &s) { return s.bits == 4 && s.blockSize % 32; }
} // namespace

// One block of bs (a multiple of 8) floats as the loops in quantizeNBitsRows
// quantize it, to the same bits: the products x * (127 / amax) rounded to
// nearest even (vcvtps2dq under the default rounding, as lrint), within
// [-127, 127] without a clamp since |x| <= amax.
static __attribute__((target("avx2,fma"))) void quantizeBlockAvx2(const float *x, int64_t bs, int8_t *q, float &sx,
                                                                  int32_t &sum) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 big = _mm256_set1_ps(std::numeric_limits<float>::max());
  __m256 amax = _mm256_setzero_ps(), finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  for (int64_t i = 0; i < bs; i += 8) {
    const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i), absMask);
    finite = _mm256_and_ps(finite, _mm256_cmp_ps(a, big, _CMP_LE_OQ)); // false for inf and NaN
    amax = _mm256_max_ps(amax, a);
  }
  if (_mm256_movemask_ps(finite) != 0xFF) {
    sx = NAN;
    return;
  }
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  const float m = _mm_cvtss_f32(h);
  if (m == 0.f)
    return;
  sx = m / 127.f;
  const __m256 inv = _mm256_set1_ps(127.f / m);
  __m256i total = _mm256_setzero_si256();
  for (int64_t i = 0; i < bs; i += 8) {
    const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    total = _mm256_add_epi32(total, v);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(q + i), _mm_packs_epi16(w, w));
  }
  const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
  const __m128i t2 = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
  sum = _mm_cvtsi128_si32(_mm_add_epi32(t2, _mm_shuffle_epi32(t2, 0xB1)));
}

Int8Kernel int8KernelFor(const NBitsShape &s, Int8Kernel wanted) {
  if (wanted == Int8Kernel::Loops || s.blockSize % 32)
    return Int8Kernel::Loops;
  if (wanted == Int8Kernel::Vnni && cpuHasVnni())
    return Int8Kernel::Vnni;
  return cpuHasAvx2() ? Int8Kernel::Avx2 : Int8Kernel::Loops;
}

void quantizeNBitsRows(const NBitsShape &s, const float *a, int64_t M, Int8Rows &rows, Int8Kernel kernel) {
  const int64_t bs = s.blockSize, blocks = s.blocks(), total = nbitsRowFloats(s);
  rows.rowBytes = total;
  rows.blocks = blocks;
  rows.pairs = int8KernelFor(s, kernel) != Int8Kernel::Loops && s.bits == 4 && bs == 32;
  rows.q.assign(static_cast<size_t>(M * total), 0);
  rows.scale.assign(static_cast<size_t>(M * blocks), 0.f);
  rows.sum.assign(static_cast<size_t>(M * blocks), 0);
  static thread_local std::vector<float> arranged; // a decode step quantizes a row per matmul
  arranged.resize(static_cast<size_t>(total));
  const bool avx2 = cpuHasAvx2(); // the same numbers as the loops below, 8 lanes at a time
  for (int64_t m = 0; m < M; ++m) {
    if (paired(s)) {
      for (int64_t k = 0; k < total; ++k)
        arranged[size_t(k)] = k < s.K ? a[m * s.K + k] : 0.f;
    } else {
      arrangeNBitsRow(s, a + m * s.K, arranged.data());
    }
    for (int64_t j = 0; j < blocks; ++j) {
      const float *x = arranged.data() + j * bs;
      if (avx2) {
        int8_t *q = rows.q.data() + m * total + j * bs;
        quantizeBlockAvx2(x, bs, q, rows.scale[size_t(m * blocks + j)], rows.sum[size_t(m * blocks + j)]);
        continue;
      }
      float amax = 0.f;
      bool finite = true;
      for (int64_t i = 0; i < bs; ++i) {
        finite = finite && std::isfinite(x[i]);
        amax = std::max(amax, std::fabs(x[i]));
      }
      float &sx = rows.scale[size_t(m * blocks + j)];
      if (!finite) {
        sx = NAN;
        continue;
      }
      if (amax == 0.f)
        continue;
      sx = amax / 127.f;
      const float inv = 127.f / amax;
      int8_t *q = rows.q.data() + m * total + j * bs;
      int32_t sum = 0;
      for (int64_t i = 0; i < bs; ++i) {
        const long v = std::lrint(x[i] * inv); // to nearest, ties to even
        q[i] = static_cast<int8_t>(std::clamp<long>(v, -127, 127));
        sum += q[i];
      }
      rows.sum[size_t(m * blocks + j)] = sum;
    }
    if (rows.pairs) // [E0 O0 E1 O1] -> [E0 E1 O0 O1], 16 bytes each
      for (int64_t j = 0; j + 1 < blocks; j += 2) {
        int8_t *q = rows.q.data() + m * total + j * 32;
        int8_t t[16];
        std::memcpy(t, q + 16, 16);
        std::memcpy(q + 16, q + 32, 16);
        std::memcpy(q + 32, t, 16);
      }
  }
}

namespace {

// The plain loops: any block size; the same integers as VNNI, summed as one
// int32 a block.
void rowsScalar(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1) {
  const int64_t bs = w.shape.blockSize, blocks = w.shape.blocks(), blob = w.shape.blobBytes(), N = w.shape.N;
  const bool fzp = w.zeroPoints == ZeroPointKind::Float;
  for (int64_t n = n0; n < n1; ++n) {
    const NBitsIntZeroPoints zp(w, n);
    for (int64_t m = 0; m < M; ++m) {
      const int8_t *xq = x.q.data() + m * x.rowBytes;
      float acc = 0.f, side = 0.f;
      for (int64_t j = 0; j < blocks; ++j) {
        const uint8_t *b = w.codes + (n * blocks + j) * blob;
        const int8_t *xj = xq + j * bs;
        const int32_t isum = x.sum[size_t(m * blocks + j)];
        int32_t dot = fzp ? 0 : -zp.at(j) * isum;
        if (w.shape.bits == 8) {
          for (int64_t i = 0; i < bs; ++i)
            dot += int32_t(b[i]) * xj[i];
        } else if (paired(w.shape)) {
          for (int64_t i = 0; i < bs / 2; ++i)
            dot += int32_t(b[i] & 15) * xj[2 * i] + int32_t(b[i] >> 4) * xj[2 * i + 1];
        } else if (x.pairs && (j ^ 1) < blocks) { // a whole pair: this block's evens, then its odds, 32 apart
          const int8_t *e = xq + (j & ~int64_t(1)) * 32 + (j & 1) * 16;
          for (int64_t i = 0; i < 16; ++i)
            dot += int32_t(b[i] & 15) * e[i] + int32_t(b[i] >> 4) * e[32 + i];
        } else {
          for (int64_t g = 0; g < bs; g += 32)
            for (int64_t i = 0; i < 16 && g + i < bs; ++i) { // arranged x: 16 even elements, then 16 odd
              const uint8_t c = b[g / 2 + i];
              dot += int32_t(c & 15) * xj[g + i] + int32_t(c >> 4) * xj[g + 16 + i];
            }
        }
        const float f = w.scales[n * blocks + j] * x.scale[size_t(m * blocks + j)];
        acc += static_cast<float>(dot) * f;
        if (fzp)
          side += f * w.zpFloat[n * blocks + j] * static_cast<float>(isum);
      }
      y[m * N + n] = acc - side;
    }
  }
}

#define GENC_VNNI __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni,fma")))

// Lane j of the result: the sum of d[j]'s eight lanes.
GENC_VNNI inline __m256i sum8(const __m256i (&d)[8]) {
  const __m256i t0 = _mm256_hadd_epi32(d[0], d[1]), t1 = _mm256_hadd_epi32(d[2], d[3]);
  const __m256i t2 = _mm256_hadd_epi32(d[4], d[5]), t3 = _mm256_hadd_epi32(d[6], d[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

// 32 codes as 32 unsigned bytes: 8-bit as stored; 4-bit, 16 bytes' low
// nibbles then their high nibbles (x's even elements, then its odd).
template <int BITS> GENC_VNNI inline __m256i codes32(const uint8_t *p) {
  if constexpr (BITS == 8) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  } else {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)), low4 = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(c, 4), low4), _mm_and_si128(c, low4));
  }
}

// d[m][b] += 32 codes at c . 32 bytes of row m of x at xq (rows xr apart).
template <int M, int BITS>
GENC_VNNI inline __attribute__((always_inline)) void dot32(__m256i (&d)[M][8], int b, const uint8_t *c,
                                                           const int8_t *xq, int64_t xr) {
  const __m256i v = codes32<BITS>(c);
  for (int m = 0; m < M; ++m)
    d[m][b] = _mm256_dpbusd_epi32(d[m][b], v, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + m * xr)));
}

// The integer dot products of nb <= 8 blocks from c0 / x0: lane b of
// dots[m] is block b's against row m. Each block in its own vector
// (vpdpbusd, 32 codes a step; b a constant in each call, so d stays in
// registers), the eight summed into one.
template <int M, int BITS, bool BS32>
GENC_VNNI inline __attribute__((always_inline)) void blockDots(__m256i (&dots)[M], const uint8_t *c0,
                                                               const int8_t *x0, int64_t bs, int64_t blob,
                                                               int64_t xr, int nb) {
  __m256i d[M][8];
  for (int m = 0; m < M; ++m)
    for (int b = 0; b < 8; ++b)
      d[m][b] = _mm256_setzero_si256();
  if (BS32 && nb == 8) {
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b)
      dot32<M, BITS>(d, b, c0 + b * blob, x0 + b * bs, xr);
  } else {
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b)
      if (b < nb)
        for (int64_t g = 0; g < bs; g += 32)
          dot32<M, BITS>(d, b, c0 + b * blob + (BITS == 8 ? g : g / 2), x0 + b * bs + g, xr);
  }
  for (int m = 0; m < M; ++m)
    dots[m] = sum8(d[m]);
}

// The same for 4-bit blocks of 32 with x in pairs (Int8Rows::pairs): two
// blocks a 32-byte load of codes, their low nibbles against both blocks'
// even elements, the high ones against the odd; pair p's vector holds
// block 2p in lanes 0-3 and 2p + 1 in lanes 4-7. An odd nb's last block is
// the matrix's last, without a pair ([evens, odds] as usual).
template <int M>
GENC_VNNI inline __attribute__((always_inline)) void pairDots(__m256i (&dots)[M], const uint8_t *c0,
                                                              const int8_t *x0, int64_t xr, int nb) {
  __m256i P[M][4];
  for (int m = 0; m < M; ++m)
    for (int p = 0; p < 4; ++p)
      P[m][p] = _mm256_setzero_si256();
  const __m256i low4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p)
    if (2 * p + 1 < nb) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c0 + 2 * p * 16));
      const __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      for (int m = 0; m < M; ++m) {
        const int8_t *xp = x0 + m * xr + 2 * p * 32;
        P[m][p] = _mm256_dpbusd_epi32(P[m][p], lo, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xp)));
        P[m][p] = _mm256_dpbusd_epi32(P[m][p], hi, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xp + 32)));
      }
    }
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int m = 0; m < M; ++m) {
    const __m256i u = _mm256_hadd_epi32(_mm256_hadd_epi32(P[m][0], P[m][1]), _mm256_hadd_epi32(P[m][2], P[m][3]));
    dots[m] = _mm256_permutevar8x32_epi32(u, order); // lanes were blocks 0 2 4 6 1 3 5 7
  }
  if (nb % 2) {
    __m256i d1[M][8];
    for (int m = 0; m < M; ++m)
      d1[m][0] = _mm256_setzero_si256();
    dot32<M, 4>(d1, 0, c0 + (nb - 1) * 16, x0 + (nb - 1) * 32, xr);
    for (int m = 0; m < M; ++m) {
      const int32_t last = nbitsHsumEpi32(d1[m][0]);
      dots[m] = _mm256_add_epi32(dots[m], _mm256_maskz_set1_epi32(static_cast<__mmask8>(1u << (nb - 1)), last));
    }
  }
}

// Blocks 8 at a time: their integer dot products (blockDots, pairDots),
// the zero points taken off as integers (z * sum(xq)) or, float ones, after
// the conversion, then one multiply-add by s * sx for the eight.
template <int M, int BITS, bool FZP, bool BS32>
GENC_VNNI void rowsVnni(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t n0, int64_t n1) {
  const int64_t bs = w.shape.blockSize, blocks = w.shape.blocks(), blob = w.shape.blobBytes(), N = w.shape.N;
  const int64_t xr = x.rowBytes;
  const bool packed = w.zeroPoints == ZeroPointKind::Packed;
  const __m256i zDefault = _mm256_set1_epi32(w.shape.defaultZeroPoint());
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t *codes = w.codes + n * blocks * blob;
    const float *sc = w.scales + n * blocks;
    const NBitsIntZeroPoints zp(w, n);
    if (n + kNBitsAhead < n1)
      nbitsPrefetchColumn(codes + kNBitsAhead * blocks * blob, sc + kNBitsAhead * blocks, blocks * blob, blocks);
    __m256 acc[M];
    for (int m = 0; m < M; ++m)
      acc[m] = _mm256_setzero_ps();
    for (int64_t j0 = 0; j0 < blocks; j0 += 8) {
      const int nb = static_cast<int>(std::min<int64_t>(8, blocks - j0));
      const __mmask8 live = static_cast<__mmask8>((1u << nb) - 1);
      __m256i dots[M];
      if constexpr (BITS == 4 && BS32)
        pairDots<M>(dots, codes + j0 * blob, x.q.data() + j0 * bs, xr, nb);
      else
        blockDots<M, BITS, BS32>(dots, codes + j0 * blob, x.q.data() + j0 * bs, bs, blob, xr, nb);
      const __m256 s = _mm256_maskz_loadu_ps(live, sc + j0);
      __m256i z = zDefault;
      __m256 zf = _mm256_setzero_ps();
      if (FZP) {
        zf = _mm256_maskz_loadu_ps(live, w.zpFloat + n * blocks + j0);
      } else if (packed) {
        alignas(32) int32_t zs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int b = 0; b < nb; ++b)
          zs[b] = zp.at(j0 + b);
        z = _mm256_load_si256(reinterpret_cast<const __m256i *>(zs));
      }
      for (int m = 0; m < M; ++m) {
        const __m256i xsum = _mm256_maskz_loadu_epi32(live, x.sum.data() + m * blocks + j0);
        const __m256 sx = _mm256_maskz_loadu_ps(live, x.scale.data() + m * blocks + j0), f = _mm256_mul_ps(s, sx);
        __m256i dot = dots[m];
        if (!FZP)
          dot = _mm256_sub_epi32(dot, _mm256_mullo_epi32(z, xsum));
        __m256 v = _mm256_cvtepi32_ps(dot);
        if (FZP)
          v = _mm256_fnmadd_ps(zf, _mm256_cvtepi32_ps(xsum), v);
        acc[m] = _mm256_fmadd_ps(v, f, acc[m]);
      }
    }
    for (int m = 0; m < M; ++m)
      y[m * N + n] = nbitsHsum256(acc[m]);
  }
}

using Fn = void (*)(const Int8Rows &, const NBitsMatrix &, float *, int64_t, int64_t);

template <int BITS, bool FZP, bool BS32> constexpr std::array<Fn, 8> byRows() {
  return {rowsVnni<1, BITS, FZP, BS32>, rowsVnni<2, BITS, FZP, BS32>, rowsVnni<3, BITS, FZP, BS32>,
          rowsVnni<4, BITS, FZP, BS32>, rowsVnni<5, BITS, FZP, BS32>, rowsVnni<6, BITS, FZP, BS32>,
          rowsVnni<7, BITS, FZP, BS32>, rowsVnni<8, BITS, FZP, BS32>};
}

bool detectVnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
}

} // namespace

bool cpuHasVnni() {
  static const bool has = detectVnni();
  return has;
}

void nbitsInt8Rows(const Int8Rows &x, const NBitsMatrix &w, float *y, int64_t M, int64_t n0, int64_t n1,
                   Int8Kernel kernel) {
  const Int8Kernel k = M < 1 || M > 8 ? Int8Kernel::Loops : int8KernelFor(w.shape, kernel);
  if (k == Int8Kernel::Loops) {
    rowsScalar(x, w, y, M, n0, n1);
  } else if (k == Int8Kernel::Avx2) {
    nbitsInt8RowsAvx2(x, w, y, M, n0, n1);
  } else {
    static const std::array<Fn, 8> t[2][2][2] = {
        {{byRows<4, false, false>(), byRows<4, false, true>()}, {byRows<4, true, false>(), byRows<4, true, true>()}},
        {{byRows<8, false, false>(), byRows<8, false, true>()}, {byRows<8, true, false>(), byRows<8, true, true>()}}};
    t[w.shape.bits == 8][w.zeroPoints == ZeroPointKind::Float][w.shape.blockSize == 32][M - 1](x, w, y, n0, n1);
  }
}

} // namespace genrt::cpu
