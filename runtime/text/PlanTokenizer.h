// The tokenizer a plan carries: genc packs the tokenizer.json found beside
// the model into the plan's blob (runtime/PlanFormat.h, "tokenizer").
#pragma once
#include "runtime/Status.h"
#include "runtime/text/Tokenizer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace genrt {
namespace text {

/// What the plan's tokenizer section carries for chat (genc compile packs
/// it from tokenizer_config.json / chat_template.jinja): the special tokens
/// transformers passes to a chat template (its special_tokens_map), and the
/// chat templates by name ("": the one unnamed template).
struct PlanChat {
  std::map<std::string, std::string> specialTokens;
  std::map<std::string, std::string> templates;
};

/// Reads the plan's tokenizer section (and, given `chat`, what it says for
/// chat). A plan without one gives ok, a null `out` and an empty `chat`.
/// Every offset is checked (a plan is untrusted input); errors name the plan.
Status loadPlanTokenizer(const std::string &planPath, std::unique_ptr<Tokenizer> &out, PlanChat *chat = nullptr);
/// The same over a plan's bytes in memory; `name` names it in errors.
Status loadPlanTokenizerFromMemory(const uint8_t *data, size_t size, const std::string &name,
                                   std::unique_ptr<Tokenizer> &out, PlanChat *chat = nullptr);

/// Encodes a text prompt as Hugging Face's tokenizer(text) does (special
/// tokens added) with the plan's tokenizer `tok`, for genrun and the Python
/// package alike. Errors: no tokenizer (the message ends with "or
/// <otherwise>": what the caller accepts instead), text that is not UTF-8
/// (the byte), text the tokenizer cannot encode.
Status encodePrompt(const Tokenizer *tok, const std::string &text, const std::string &otherwise,
                    std::vector<int64_t> &ids);

} // namespace text
} // namespace genrt
