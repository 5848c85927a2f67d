#include "runtime/text/PlanTokenizer.h"

#include "runtime/text/Unicode.h"

namespace genrt {
namespace text {

Status loadPlanTokenizer(const Plan &plan, const std::string &name, std::unique_ptr<Tokenizer> &out) {
  out.reset();
  if (plan.tokenizerJson.empty())
    return Status::ok();
  return statusOnOutOfMemory("reading the tokenizer of plan '" + name + "'", [&] {
    if (Status s = Tokenizer::fromJson(std::string(plan.tokenizerJson), out); !s)
      return Status::error("plan '" + name + "': " + s.message());
    return Status::ok();
  });
}

Status encodePrompt(const Tokenizer *tok, const std::string &text, const std::string &otherwise,
                    std::vector<int64_t> &ids) {
  if (!tok)
    return Status::error("the plan carries no tokenizer (compile the model with its tokenizer.json beside it, or " +
                         otherwise + ")");
  if (size_t bad; !isValidUtf8(text, &bad))
    return Status::error("the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  return tok->encode(text, /*addSpecialTokens=*/true, ids);
}

} // namespace text
} // namespace genrt
