// genrun's I/O formats, JSON lines:
//   in:  {"input_ids": [...], "attention_mask": [...]}   (attention_mask optional)
//   out: {"sequences": [{"output_ids": [...], "score": S}, ...]}
#pragma once
#include "runtime/Status.h"
#include "runtime/search/Generate.h"

#include <cstdint>
#include <string>
#include <vector>

namespace genrt {

/// Parses every non-blank line of `text` as one prompt. `lineNumbers[k]` is
/// the 1-based line prompt k came from. Errors name the place:
/// "NAME:LINE:COL: ..." for JSON syntax, "NAME:LINE: field \"F\": ..." for
/// content (unknown or missing fields, non-integer ids).
Status readPromptLines(const std::string &text, const std::string &name, std::vector<Prompt> &prompts,
                       std::vector<int64_t> &lineNumbers);

/// One output line, without the newline.
std::string resultLine(const GenerationResult &result);

} // namespace genrt
