// Apart from PlanTokenizer.cpp: the tests' genrun_fake replaces
// loadPlanTokenizer at link time, and needs this one all the same.
#include "runtime/text/PlanTokenizer.h"
#include "runtime/text/Unicode.h"

namespace genrt {
namespace text {

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
