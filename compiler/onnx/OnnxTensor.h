// ONNX element types and TensorProto -> Tensor.
#pragma once
#include "compiler/ir/Tensor.h"
#include "compiler/onnx/ExternalData.h"
#include "genc_onnx/onnx.pb.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>

namespace genc {

/// The IR dtype of an ONNX TensorProto.DataType; nullopt for types the IR
/// has no counterpart for (strings, complex, uint16, float8, ...).
std::optional<DType> dtypeFromOnnx(int32_t onnxType);
/// The ONNX spelling of a data type, for messages (`UINT16`, or the number).
std::string onnxTypeName(int32_t onnxType);

/// Decodes a TensorProto in its stored dtype. Raw bytes are viewed, not
/// copied, where they are aligned: `owner` keeps the proto (or mapping) alive.
/// Errors do not name the tensor; the caller adds where it came from.
llvm::Expected<Tensor> tensorFromProto(const onnx::TensorProto &t,
                                       const std::shared_ptr<const void> &owner,
                                       ExternalDataReader &external);

/// A shape's element count, or nullopt if a dim is negative or the byte size
/// of `elemSize`-byte elements would overflow.
std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape, size_t elemSize);

} // namespace genc
