// genrun's I/O formats, JSON lines:
//   in:  {"input_ids": [...], "attention_mask": [...]}   (attention_mask optional)
//        or {"text": "..."} for plans that carry a tokenizer
//   out: {"sequences": [{"output_ids": [...], "text": "...", "score": S}, ...]}
//        ("text" where the plan carries a tokenizer)
//   --stream: one line per event (runtime/search/TextStream.h), in the order
//        they happen; "prompt" is the input line's index (from 0):
//        {"event":"token","prompt":P,"sequence":S,"token_id":T,"text":"piece"}
//        {"event":"sequence","prompt":P,"sequence":S,"output_ids":[...],"text":"...","score":X}
//        {"event":"done","prompt":P,"sequences":[...as above...]}
#pragma once
#include "runtime/Status.h"
#include "runtime/search/Generate.h"
#include "runtime/search/TextStream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace genrt {

/// Parses every non-blank line of `text` as one prompt. `lineNumbers[k]` is
/// the 1-based line prompt k came from. Errors name the place:
/// "NAME:LINE:COL: ..." for JSON syntax, "NAME:LINE: field \"F\": ..." for
/// content (unknown or missing fields, non-integer ids).
/// `texts` (when given) gets one entry per prompt: the "text" of a text
/// line, whose prompt is left empty for the caller to tokenize, or nullopt.
/// Without `texts`, a "text" field is an unknown field.
Status readPromptLines(const std::string &text, const std::string &name, std::vector<Prompt> &prompts,
                       std::vector<int64_t> &lineNumbers,
                       std::vector<std::optional<std::string>> *texts = nullptr);

/// One output line, without the newline. `texts` (when given): the decoded
/// text of each sequence, written beside its output_ids.
std::string resultLine(const GenerationResult &result, const std::vector<std::string> *texts = nullptr);

/// One --stream line, without the newline. `withText`: the plan carries a
/// tokenizer, so events carry "text".
std::string streamEventLine(const StreamEvent &ev, bool withText);

} // namespace genrt
