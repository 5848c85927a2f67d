// The tokenizer a plan carries: genc packs the tokenizer.json found beside
// the model into the plan's blob (runtime/PlanFormat.h, "tokenizer").
#pragma once
#include "runtime/Status.h"
#include "runtime/text/Tokenizer.h"

#include <memory>
#include <string>

namespace genrt {
namespace text {

/// Reads the plan's tokenizer section. A plan without one gives ok and a
/// null `out`. Every offset is checked (a plan is untrusted input); errors
/// name the plan.
Status loadPlanTokenizer(const std::string &planPath, std::unique_ptr<Tokenizer> &out);
/// The same over a plan's bytes in memory; `name` names it in errors.
Status loadPlanTokenizerFromMemory(const uint8_t *data, size_t size, const std::string &name,
                                   std::unique_ptr<Tokenizer> &out);

} // namespace text
} // namespace genrt
