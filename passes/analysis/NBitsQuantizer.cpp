#include "passes/analysis/NBitsQuantizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace genc {
namespace {

// Smallest normal f16: below it a scale keeps fewer than 11 bits.
constexpr float kHalfNormalMin = 6.103515625e-05f, kHalfMax = 65504.f;

struct Block {
  float scale = 0.f; // exact as stored (already rounded when f16)
  int32_t zero = 0;  // the zero point the codes are relative to
};

// The scale and zero point of one block's values x[0..n).
Block chooseBlock(const float *x, int64_t n, const genrt::NBitsShape &s, bool zeroPoint, bool half) {
  auto round = [&](float v) { return half ? halfToFloat(floatToHalf(v)) : v; };
  const int32_t levels = (1 << s.bits) - 1;
  Block b;
  if (!zeroPoint) {
    b.zero = s.defaultZeroPoint();
    float vmax = 0.f; // the value of largest magnitude, with its sign
    for (int64_t i = 0; i < n; ++i)
      if (std::fabs(x[i]) > std::fabs(vmax))
        vmax = x[i];
    b.scale = round(s.bits == 4 ? vmax / -8.f : std::fabs(vmax) / 127.f);
    return b;
  }
  float mn = x[0], mx = x[0];
  for (int64_t i = 1; i < n; ++i)
    mn = std::min(mn, x[i]), mx = std::max(mx, x[i]);
  if (mx == mn) { // one value v: v = (1 - 0) * v
    b.scale = round(mx);
    b.zero = 0;
    return b;
  }
  // The range holds 0, so that the zero point is a code (0..levels).
  mn = std::min(mn, 0.f), mx = std::max(mx, 0.f);
  b.scale = round((mx - mn) / static_cast<float>(levels));
  b.zero = b.scale > 0.f ? static_cast<int32_t>(std::clamp(std::rint(-mn / b.scale), 0.f, static_cast<float>(levels))) : 0;
  return b;
}

int32_t code(float x, const Block &b, const genrt::NBitsShape &s, bool zeroPoint) {
  const int32_t levels = (1 << s.bits) - 1;
  if (b.scale == 0.f)
    return b.zero;
  float q = std::rint(x / b.scale) + static_cast<float>(b.zero);
  const float lo = zeroPoint || s.bits == 4 ? 0.f : 1.f; // symmetric 8-bit: [-127, 127] + 128
  return static_cast<int32_t>(std::clamp(q, lo, static_cast<float>(levels)));
}

} // namespace

std::string quantizeNBits(const Tensor &w, bool transposed, const genrt::NBitsShape &s, bool zeroPoint,
                          NBitsWeights &out) {
  const Tensor f = w.dtype() == DType::F32 ? w : w.castTo(DType::F32);
  const float *p = f.data<float>();
  const int64_t K = s.K, N = s.N, blocks = s.blocks(), bs = s.blockSize, blob = s.blobBytes();
  auto at = [&](int64_t n, int64_t k) { return transposed ? p[n * K + k] : p[k * N + n]; };
  for (int64_t i = 0, e = K * N; i < e; ++i)
    if (!std::isfinite(p[i]))
      return "it holds a non-finite value (" + std::to_string(p[i]) + ")";

  // First pass: every block's scale in f32, to pick the scales' dtype.
  std::vector<float> col(static_cast<size_t>(blocks * bs));
  bool half = true;
  for (int64_t n = 0; n < N && half; ++n) {
    for (int64_t k = 0; k < K; ++k)
      col[k] = at(n, k);
    for (int64_t j = 0; j < blocks; ++j) {
      const float sc = std::fabs(chooseBlock(&col[j * bs], std::min(bs, K - j * bs), s, zeroPoint, false).scale);
      half &= sc == 0.f || (sc >= kHalfNormalMin && sc <= kHalfMax);
    }
  }

  out.codes = std::make_shared<Tensor>(DType::U8, std::vector<int64_t>{N, blocks, blob});
  out.scales = std::make_shared<Tensor>(half ? DType::F16 : DType::F32, std::vector<int64_t>{N, blocks});
  out.zeroPoints = zeroPoint ? std::make_shared<Tensor>(DType::U8, std::vector<int64_t>{N, s.zeroPointBytes()})
                             : nullptr;
  uint8_t *codes = out.codes->data<uint8_t>();
  uint8_t *zps = zeroPoint ? out.zeroPoints->data<uint8_t>() : nullptr;
  std::fill(codes, codes + N * blocks * blob, uint8_t(0));
  if (zps)
    std::fill(zps, zps + N * s.zeroPointBytes(), uint8_t(0));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k)
      col[k] = at(n, k);
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t k0 = j * bs, kn = std::min(bs, K - k0);
      const Block b = chooseBlock(&col[k0], kn, s, zeroPoint, half);
      out.scales->setDouble(n * blocks + j, b.scale);
      if (zps) {
        uint8_t &z = zps[n * s.zeroPointBytes() + (s.bits == 4 ? j / 2 : j)];
        z |= static_cast<uint8_t>(s.bits == 4 ? b.zero << ((j & 1) * 4) : b.zero);
      }
      uint8_t *blk = codes + (n * blocks + j) * blob;
      for (int64_t i = 0; i < bs; ++i) {
        const int32_t q = i < kn ? code(col[k0 + i], b, s, zeroPoint) : b.zero; // padding reads as 0
        if (s.bits == 8)
          blk[i] = static_cast<uint8_t>(q);
        else
          blk[i / 2] |= static_cast<uint8_t>(q << ((i & 1) * 4));
      }
    }
  }
  return "";
}

} // namespace genc
