// Reads tensor bytes stored outside the .onnx file (`data_location: EXTERNAL`).
//
// Exporters write large models as `model.onnx` + `model.onnx.data`; each
// tensor names a file relative to the model's folder, an offset and a length.
// Files are mapped once and shared by every tensor that lives in them; the
// tensors view the mapping, so a multi-gigabyte model is never copied.
#pragma once
#include "compiler/ir/Tensor.h"
#include "genc_onnx/onnx.pb.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <memory>
#include <string>

namespace genc {

class ExternalDataReader {
public:
  explicit ExternalDataReader(std::string modelDir) : modelDir_(std::move(modelDir)) {}

  /// The tensor `t` (dtype and shape already decoded) whose data lives in an
  /// external file. Errors name the file; the caller names the tensor.
  llvm::Expected<Tensor> read(const onnx::TensorProto &t, DType dtype,
                              const std::vector<int64_t> &shape);

private:
  llvm::Expected<std::shared_ptr<llvm::MemoryBuffer>> open(const std::string &location);
  std::string fullPath(const std::string &location) const;
  std::string modelDir_;
  std::map<std::string, std::shared_ptr<llvm::MemoryBuffer>> files_;
};

} // namespace genc
