// ONNX -> IR, op for op, with the ONNX node name as each op's location.
//
// Opset differences are normalised here (axes as attribute or input, Split
// sizes, ...), so passes see one form per op. Errors name the node, the op
// and the opset; a bad file never crashes the importer.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace genc {

struct ImportOptions {
  /// Name of the function the graph becomes.
  std::string functionName = "main";
  /// Initializers and Constant tensors with more elements than this become
  /// module weights; smaller ones become `constant` ops.
  int64_t inlineConstantLimit = 16;
};

/// Imports a .onnx file (external data is read relative to the file's folder)
/// into a new module with one function.
llvm::Expected<std::unique_ptr<Module>> importOnnxFile(const std::string &path,
                                                       const ImportOptions &opts = {});
/// Imports a model's bytes held in memory (`name` names it in errors;
/// external data is read relative to `externalDataDir`): the fuzzer's entry.
llvm::Expected<std::unique_ptr<Module>> importOnnxBytes(llvm::StringRef bytes, const std::string &name,
                                                        const std::string &externalDataDir,
                                                        const ImportOptions &opts = {});
/// Imports into an existing module (for encoder + decoder pairs). A weight
/// whose name is taken is shared when its content is identical (tied
/// embeddings), else renamed with `weightPrefix` in front. On error no
/// function is added (weights read before the error stay, unused).
llvm::Error importOnnxFileInto(Module &m, const std::string &path, const ImportOptions &opts,
                               const std::string &weightPrefix);

} // namespace genc
