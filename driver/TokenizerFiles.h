// Finds the tokenizer beside a model (tokenizer.json, with
// tokenizer_config.json's special tokens) and checks that the runtime can
// run it, so that a plan never carries a tokenizer genrun would refuse.
#pragma once
#include "codegen/PlanWriter.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace genc {

/// None when `dir` holds no tokenizer.json. A SentencePiece model without a
/// tokenizer.json is an error naming the file (not packed yet: convert it
/// with transformers' tokenizer.save_pretrained, which writes tokenizer.json),
/// as is a tokenizer.json the runtime cannot run.
llvm::Expected<std::optional<PlanTokenizer>> findTokenizer(const std::string &dir);

} // namespace genc
