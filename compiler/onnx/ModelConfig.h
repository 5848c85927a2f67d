// The configuration half of a Hugging Face export folder, beside the ONNX
// graph the importer reads (Importer.h): config.json / generation_config.json
// into the module's metadata as `config.<key>` (scalars and integer lists),
// so passes and the plan writer see eos / pad / bos / decoder_start ids,
// sliding_window, sizes.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <string>

namespace genc {

/// Looks for config.json and generation_config.json in `dir`; a missing file
/// is fine, a malformed one is an error. generation_config.json wins.
llvm::Error loadModelConfig(const std::string &dir, Module &m);

} // namespace genc
