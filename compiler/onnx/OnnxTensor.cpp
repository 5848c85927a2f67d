#include "compiler/onnx/OnnxTensor.h"

#include <cstring>
#include <limits>

namespace genc {

static llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::optional<DType> dtypeFromOnnx(int32_t onnxType) {
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT: return DType::F32;
  case TP::FLOAT16: return DType::F16;
  case TP::BFLOAT16: return DType::BF16;
  case TP::DOUBLE: return DType::F64;
  case TP::INT64: return DType::I64;
  case TP::INT32: return DType::I32;
  case TP::INT8: return DType::I8;
  case TP::UINT8: return DType::U8;
  case TP::BOOL: return DType::Bool;
  default: return std::nullopt;
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnxType));
  return "type " + std::to_string(onnxType);
}

std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape, size_t elemSize) {
  // Keep byte sizes far below what size_t arithmetic could wrap.
  const int64_t limit = (int64_t(1) << 48) / static_cast<int64_t>(elemSize ? elemSize : 1);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > limit / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

// Copies typed-field values (float_data, int64_data, ...) into a tensor of
// the stored dtype; 16-bit floats arrive as bit patterns in int32_data.
template <typename Field>
static Tensor fromField(DType dtype, const std::vector<int64_t> &shape, const Field &field) {
  Tensor out(dtype, shape);
  int64_t n = out.numElements();
  for (int64_t i = 0; i < n; ++i) {
    auto v = field.Get(static_cast<int>(i));
    switch (dtype) {
    case DType::F32: out.data<float>()[i] = static_cast<float>(v); break;
    case DType::F64: out.data<double>()[i] = static_cast<double>(v); break;
    case DType::F16:
    case DType::BF16: out.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DType::I64: out.data<int64_t>()[i] = static_cast<int64_t>(v); break;
    case DType::I32: out.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::I8: out.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::U8: out.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::Bool: out.data<uint8_t>()[i] = v != 0; break;
    }
  }
  return out;
}

llvm::Expected<Tensor> tensorFromProto(const onnx::TensorProto &t,
                                       const std::shared_ptr<const void> &owner,
                                       ExternalDataReader &external) {
  auto dtype = dtypeFromOnnx(t.data_type());
  if (!dtype)
    return fail("unsupported data type " + onnxTypeName(t.data_type()));
  if (t.has_segment())
    return fail("segmented tensors are not supported");
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  auto n = checkedNumElements(shape, dtypeSize(*dtype));
  if (!n)
    return fail("bad shape");
  size_t numBytes = static_cast<size_t>(*n) * dtypeSize(*dtype);

  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return external.read(t, *dtype, shape);

  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    if (raw.size() != numBytes)
      return fail("raw_data has " + std::to_string(raw.size()) + " bytes, its shape needs " +
                  std::to_string(numBytes));
    // ONNX raw data is little-endian, as is every host we build for.
    if (reinterpret_cast<uintptr_t>(raw.data()) % dtypeSize(*dtype) == 0)
      return Tensor(*dtype, shape, owner, raw.data());
    Tensor copy(*dtype, shape);
    if (numBytes)
      std::memcpy(copy.data<uint8_t>(), raw.data(), numBytes);
    return copy;
  }

  auto checkCount = [&](int count, const char *field) -> llvm::Error {
    if (count != *n)
      return fail(std::string(field) + " has " + std::to_string(count) + " values, its shape needs " +
                  std::to_string(*n));
    return llvm::Error::success();
  };
  using TP = onnx::TensorProto;
  switch (t.data_type()) {
  case TP::FLOAT:
    if (auto e = checkCount(t.float_data_size(), "float_data"))
      return std::move(e);
    return fromField(*dtype, shape, t.float_data());
  case TP::DOUBLE:
    if (auto e = checkCount(t.double_data_size(), "double_data"))
      return std::move(e);
    return fromField(*dtype, shape, t.double_data());
  case TP::INT64:
    if (auto e = checkCount(t.int64_data_size(), "int64_data"))
      return std::move(e);
    return fromField(*dtype, shape, t.int64_data());
  default: // INT32, INT8, UINT8, BOOL, FLOAT16, BFLOAT16 all travel in int32_data
    if (auto e = checkCount(t.int32_data_size(), "int32_data"))
      return std::move(e);
    return fromField(*dtype, shape, t.int32_data());
  }
}

} // namespace genc
