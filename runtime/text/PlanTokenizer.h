// The tokenizer a plan carries: genc packs the tokenizer.json found beside
// the model into the plan's blob (runtime/plan/PlanFormat.h, "tokenizer"), and
// the plan loader checks where it lies (Plan::tokenizerJson).
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/Status.h"
#include "runtime/text/Tokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace genrt {
namespace text {

/// The plan's tokenizer; a plan without one gives ok and a null `out`.
/// Errors name the plan (`name`).
Status loadPlanTokenizer(const Plan &plan, const std::string &name, std::unique_ptr<Tokenizer> &out);

/// Encodes a text prompt as Hugging Face's tokenizer(text) does (special
/// tokens added) with the plan's tokenizer `tok`, for genrun and the Python
/// package alike. Errors: no tokenizer (the message ends with "or
/// <otherwise>": what the caller accepts instead), text that is not UTF-8
/// (the byte), text the tokenizer cannot encode.
Status encodePrompt(const Tokenizer *tok, const std::string &text, const std::string &otherwise,
                    std::vector<int64_t> &ids);

} // namespace text
} // namespace genrt
