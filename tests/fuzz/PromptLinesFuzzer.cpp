// libFuzzer target: genrun's JSON-lines prompt reader (tools/GenrunJsonLines.h),
// then each prompt checked against a model as genrun checks it, and the
// output line written back. The property: any text gives prompts or a
// Status naming the line, never a crash. Seeds: tests/genrun/Inputs/*.jsonl.
#include "tools/GenrunJsonLines.h"

#include <optional>

using namespace genrt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<Prompt> prompts;
  std::vector<int64_t> lines;
  std::vector<std::optional<std::string>> texts;
  if (!readPromptLines(text, "fuzz.jsonl", prompts, lines, size % 2 ? &texts : nullptr))
    return 0;
  ModelInfo info;
  info.vocabSize = 1000;
  info.maxLength = 64;
  info.maxBatch = 4;
  info.maxBeams = 4;
  GenerationConfig cfg;
  for (const Prompt &p : prompts) {
    (void)validatePrompt(p, info, cfg);
    GenerationResult r;
    r.sequences.push_back({p.inputIds, -1.5});
    std::vector<std::string> decoded{text.substr(0, 16)};
    (void)resultLine(r, size % 3 ? &decoded : nullptr);
  }
  return 0;
}
