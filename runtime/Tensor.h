// A dense host tensor: constants in the IR and values in the interpreter.
#pragma once
#include "runtime/DType.h"

#include <cassert>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace genrt {

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(DType dtype, std::vector<int64_t> shape);
  /// A tensor viewing externally owned bytes (e.g. an mmap); `owner` keeps them alive.
  Tensor(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner,
         const void *bytes);

  /// A writable view of memory someone else owns (an arena buffer). Copies of a
  /// view write through to the same memory.
  static Tensor view(DType dtype, std::vector<int64_t> shape, void *bytes) {
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = std::move(shape);
    t.bytes_ = bytes;
    t.mutable_ = bytes;
    return t;
  }

  template <typename T>
  static Tensor fromVector(DType dtype, std::vector<int64_t> shape, const std::vector<T> &v) {
    Tensor t(dtype, std::move(shape));
    assert(v.size() == static_cast<size_t>(t.numElements()) && sizeof(T) == dtypeSize(dtype));
    std::copy(v.begin(), v.end(), t.data<T>());
    return t;
  }
  static Tensor scalarF32(float v) { return fromVector<float>(DType::F32, {}, {v}); }
  static Tensor scalarI64(int64_t v) { return fromVector<int64_t>(DType::I64, {}, {v}); }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const;
  size_t numBytes() const { return numElements() * dtypeSize(dtype_); }
  bool valid() const { return bytes_ != nullptr || numElements() == 0; }

  template <typename T> const T *data() const { return static_cast<const T *>(bytes_); }
  /// Writable data; copies first if the bytes are shared with another tensor or external.
  template <typename T> T *data() { makeUnique(); return static_cast<T *>(mutable_); }
  const void *rawData() const { return bytes_; }

  /// Element i converted to double / int64 whatever the dtype (for folding, printing).
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);
  /// Same data as another dtype (value conversion, ONNX Cast semantics).
  Tensor castTo(DType to) const;
  /// Same bytes, new shape (numel must match).
  Tensor reshaped(std::vector<int64_t> shape) const;

private:
  void makeUnique();
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> owner_;
  const void *bytes_ = nullptr;
  void *mutable_ = nullptr; // non-null only while we own bytes_ exclusively
};

/// Half-precision conversions (round to nearest even).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t h);
uint16_t floatToBf16(float f);

} // namespace genrt
