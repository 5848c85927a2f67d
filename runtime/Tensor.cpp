#include "runtime/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace genrt {

namespace {
// Zeroed bytes for a tensor. Large ones (genc's weights: gigabytes) in
// 2 MiB pages where the kernel offers them for the asking: a 4 KiB page fault
// per 4 KiB cost genc compile seconds of system time on a 1.1B model.
std::shared_ptr<uint8_t> zeroedBytes(size_t n) {
#ifdef __linux__
  constexpr size_t kHuge = size_t(2) << 20;
  if (n >= 2 * kHuge) {
    const size_t size = (n + kHuge - 1) / kHuge * kHuge;
    if (void *p = std::aligned_alloc(kHuge, size)) {
      madvise(p, size, MADV_HUGEPAGE); // advice: without it, ordinary pages
      std::memset(p, 0, n);
      return std::shared_ptr<uint8_t>(static_cast<uint8_t *>(p), [](uint8_t *q) { std::free(q); });
    }
  }
#endif
  return std::shared_ptr<uint8_t>(new uint8_t[n ? n : 1](), std::default_delete<uint8_t[]>());
}
} // namespace

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  auto buf = zeroedBytes(numBytes());
  mutable_ = buf.get();
  bytes_ = buf.get();
  owner_ = std::move(buf);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner,
               const void *bytes)
    : dtype_(dtype), shape_(std::move(shape)), owner_(std::move(owner)), bytes_(bytes) {}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

void Tensor::makeUnique() {
  if (mutable_ && (!owner_ || owner_.use_count() == 1)) // owned alone, or a view
    return;
  size_t n = numBytes();
  auto buf = std::shared_ptr<uint8_t>(new uint8_t[n ? n : 1](), std::default_delete<uint8_t[]>());
  if (bytes_ && n)
    std::memcpy(buf.get(), bytes_, n);
  mutable_ = buf.get();
  bytes_ = buf.get();
  owner_ = std::move(buf);
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  assert(t.numElements() == numElements());
  t.mutable_ = nullptr; // shared now: writes must copy
  return t;
}

double Tensor::getDouble(int64_t i) const {
  switch (dtype_) {
  case DType::F32: return data<float>()[i];
  case DType::F64: return data<double>()[i];
  case DType::F16: return halfToFloat(data<uint16_t>()[i]);
  case DType::BF16: return bf16ToFloat(data<uint16_t>()[i]);
  default: return static_cast<double>(getInt(i));
  }
}

int64_t Tensor::getInt(int64_t i) const {
  switch (dtype_) {
  case DType::I64: return data<int64_t>()[i];
  case DType::I32: return data<int32_t>()[i];
  case DType::I8: return data<int8_t>()[i];
  case DType::U8: return data<uint8_t>()[i];
  case DType::Bool: return data<uint8_t>()[i] != 0;
  default: return static_cast<int64_t>(getDouble(i));
  }
}

void Tensor::setDouble(int64_t i, double v) {
  switch (dtype_) {
  case DType::F32: data<float>()[i] = static_cast<float>(v); return;
  case DType::F64: data<double>()[i] = v; return;
  case DType::F16: data<uint16_t>()[i] = floatToHalf(static_cast<float>(v)); return;
  case DType::BF16: data<uint16_t>()[i] = floatToBf16(static_cast<float>(v)); return;
  case DType::Bool: data<uint8_t>()[i] = v != 0; return;
  default: setInt(i, static_cast<int64_t>(v)); return;
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  switch (dtype_) {
  case DType::I64: data<int64_t>()[i] = v; return;
  case DType::I32: data<int32_t>()[i] = static_cast<int32_t>(v); return;
  case DType::I8: data<int8_t>()[i] = static_cast<int8_t>(v); return;
  case DType::U8: data<uint8_t>()[i] = static_cast<uint8_t>(v); return;
  case DType::Bool: data<uint8_t>()[i] = v != 0; return;
  default: setDouble(i, static_cast<double>(v)); return;
  }
}

// fn(i0, i1) over [0, n): on the calling thread for small n, else in one
// piece per hardware thread (elementwise work: the pieces do not interact).
static void inPieces(int64_t n, const std::function<void(int64_t, int64_t)> &fn) {
  const int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (n < (int64_t(1) << 20) || threads == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t step = (n + threads - 1) / threads;
  for (int64_t t = 1; t < threads && t * step < n; ++t)
    pool.emplace_back(fn, t * step, std::min(n, (t + 1) * step));
  fn(0, std::min(n, step));
  for (std::thread &t : pool)
    t.join();
}

Tensor Tensor::castTo(DType to) const {
  if (to == dtype_)
    return *this;
  Tensor r(to, shape_);
  int64_t n = numElements();
  // The casts genc compile does to every weight of a plan (gigabytes): typed
  // loops, not the per-element dispatch below (16.6 s -> a few for a 1.1B);
  // `fn` a lambda so that each loop inlines its conversion.
  auto convert = [&](const auto *src, auto *dst, auto fn) {
    inPieces(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        dst[i] = fn(src[i]);
    });
  };
  if (dtype_ == DType::F32 && to == DType::F16) {
    convert(data<float>(), r.data<uint16_t>(), [](const float x) { return floatToHalf(x); });
    return r;
  }
  if (dtype_ == DType::F32 && to == DType::BF16) {
    convert(data<float>(), r.data<uint16_t>(), [](const float x) { return floatToBf16(x); });
    return r;
  }
  if (dtype_ == DType::F16 && to == DType::F32) {
    convert(data<uint16_t>(), r.data<float>(), [](const uint16_t x) { return halfToFloat(x); });
    return r;
  }
  if (dtype_ == DType::BF16 && to == DType::F32) {
    convert(data<uint16_t>(), r.data<float>(), [](const uint16_t x) { return bf16ToFloat(x); });
    return r;
  }
  if (isFloat(dtype_) && !isFloat(to) && to != DType::Bool) {
    for (int64_t i = 0; i < n; ++i) // ONNX float->int casts truncate toward zero
      r.setInt(i, static_cast<int64_t>(std::trunc(getDouble(i))));
  } else if (isFloat(to) || isFloat(dtype_)) {
    for (int64_t i = 0; i < n; ++i)
      r.setDouble(i, getDouble(i));
  } else {
    for (int64_t i = 0; i < n; ++i)
      r.setInt(i, getInt(i));
  }
  return r;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) { mant <<= 1; --exp; }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) // inf / nan
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
    ++half;
  return static_cast<uint16_t>(half);
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

} // namespace genrt
