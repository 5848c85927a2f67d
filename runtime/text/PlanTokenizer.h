// The tokenizer a plan carries: genc packs the tokenizer.json found beside
// the model into the plan's blob (runtime/PlanFormat.h, "tokenizer").
#pragma once
#include "runtime/Status.h"
#include "runtime/text/Tokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace genrt {
namespace text {

/// Reads the plan's tokenizer section. A plan without one gives ok and a
/// null `out`. Every offset is checked (a plan is untrusted input); errors
/// name the plan.
Status loadPlanTokenizer(const std::string &planPath, std::unique_ptr<Tokenizer> &out);
/// The same over a plan's bytes in memory; `name` names it in errors.
Status loadPlanTokenizerFromMemory(const uint8_t *data, size_t size, const std::string &name,
                                   std::unique_ptr<Tokenizer> &out);

/// Encodes a text prompt as Hugging Face's tokenizer(text) does (special
/// tokens added) with the plan's tokenizer `tok`, for genrun and the Python
/// package alike. Errors: no tokenizer (the message ends with "or
/// <otherwise>": what the caller accepts instead), text that is not UTF-8
/// (the byte), text the tokenizer cannot encode.
Status encodePrompt(const Tokenizer *tok, const std::string &text, const std::string &otherwise,
                    std::vector<int64_t> &ids);

} // namespace text
} // namespace genrt
