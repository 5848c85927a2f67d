#include "compiler/onnx/Importer.h"
#include "genc_onnx/onnx.pb.h"
namespace genc {
llvm::Expected<std::unique_ptr<Module>> importOnnxFile(const std::string &path, const ImportOptions &opts) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "importer: not yet written");
}
llvm::Error importOnnxFileInto(Module &m, const std::string &path, const ImportOptions &opts, const std::string &weightPrefix) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "importer: not yet written");
}
} // namespace genc
