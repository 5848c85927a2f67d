// libFuzzer target: ONNX bytes through the importer (protobuf parse, op
// conversion, shape inference) to the IR verifier. The property: any bytes
// give a module or an llvm::Error, never a crash. External data is looked
// up in a folder that does not exist, so no input reads a file. Seeds: the
// fixtures' .onnx files (tools/fuzz.sh).
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/Importer.h"

#include "llvm/Support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto m = genc::importOnnxBytes(bytes, "fuzz.onnx", "/nonexistent/genc-fuzz");
  if (!m) {
    llvm::consumeError(m.takeError());
    return 0;
  }
  llvm::consumeError(genc::verifyModule(**m));
  return 0;
}
