// genrun's JSON lines (tools/GenrunJsonLines.h): prompt lines in, result
// lines out.
#include "tools/GenrunJsonLines.h"

#include <gtest/gtest.h>

using namespace genrt;

namespace {
std::string readError(const std::string &text) {
  std::vector<Prompt> prompts;
  std::vector<int64_t> lines;
  Status s = readPromptLines(text, "in.jsonl", prompts, lines);
  return s.isOk() ? "OK" : s.message();
}
} // namespace

TEST(PromptLines, ReadsPromptsAndLineNumbers) {
  std::vector<Prompt> prompts;
  std::vector<int64_t> lines;
  ASSERT_TRUE(readPromptLines("{\"input_ids\": [1, 2]}\n\n  \r\n{\"input_ids\": [3], \"attention_mask\": [1]}\r\n",
                              "x", prompts, lines)
                  .isOk());
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(lines[0], 1);
  EXPECT_EQ(lines[1], 4);
  EXPECT_EQ(prompts[1].inputIds, std::vector<int64_t>{3});
  EXPECT_EQ(prompts[1].attentionMask, std::vector<int64_t>{1});
  EXPECT_TRUE(prompts[0].attentionMask.empty());
}

TEST(PromptLines, ErrorsNameLineAndField) {
  EXPECT_EQ(readError("{\"input_ids\": [1]}\n{\"input_ids\": [1,]}\n"), "in.jsonl:2:18: trailing comma in array");
  EXPECT_EQ(readError("{\"input_ids\": [1]}\n\n{\"input_ids\": [1, \"a\"]}"),
            "in.jsonl:3: field \"input_ids\": element 1 is not an integer (found a string)");
  EXPECT_EQ(readError("{\"input_ids\": [1.5]}"),
            "in.jsonl:1: field \"input_ids\": element 0 is not an integer (found a non-integer number)");
  EXPECT_EQ(readError("{\"input_ids\": 3}"), "in.jsonl:1: field \"input_ids\": expected an array of integers, found a number");
  EXPECT_EQ(readError("{\"attention_mask\": [1]}"), "in.jsonl:1: field \"input_ids\": missing");
  EXPECT_EQ(readError("{\"input_ids\": [1], \"atention_mask\": [1]}"),
            "in.jsonl:1: field \"atention_mask\": unknown field (expected \"input_ids\" and optionally \"attention_mask\")");
  EXPECT_EQ(readError("[1, 2]"), "in.jsonl:1: expected a JSON object {\"input_ids\": [...]}, found an array");
  EXPECT_EQ(readError("{\"input_ids\": [1]} {}"), "in.jsonl:1:20: unexpected text after the JSON value: '{'");
}

TEST(PromptLines, ResultLineFormat) {
  GenerationResult r;
  r.sequences.push_back({{5, 6, 2}, -1.25});
  r.sequences.push_back({{}, -3.0});
  EXPECT_EQ(resultLine(r), R"({"sequences":[{"output_ids":[5,6,2],"score":-1.25},{"output_ids":[],"score":-3}]})");
}

TEST(PromptLines, TextLinesWhenAsked) {
  std::vector<Prompt> prompts;
  std::vector<int64_t> lines;
  std::vector<std::optional<std::string>> texts;
  ASSERT_TRUE(readPromptLines("{\"text\": \"h\\u00e9\"}\n{\"input_ids\": [4]}\n", "in.jsonl", prompts, lines, &texts).isOk());
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(*texts[0], "h\xC3\xA9");
  EXPECT_TRUE(prompts[0].inputIds.empty());
  EXPECT_FALSE(texts[1]);
  EXPECT_EQ(prompts[1].inputIds, std::vector<int64_t>{4});
  // Without somewhere to put them, text lines are refused as before.
  Status s = readPromptLines("{\"text\": \"x\"}\n", "in.jsonl", prompts, lines);
  EXPECT_EQ(s.message(), "in.jsonl:1: field \"text\": unknown field (expected \"input_ids\" and optionally \"attention_mask\")");
}

TEST(ResultLine, TextBesideIds) {
  GenerationResult r;
  r.sequences.push_back({{5, 2}, -0.5});
  std::vector<std::string> texts{"a\"b"};
  EXPECT_EQ(resultLine(r, &texts), R"({"sequences":[{"output_ids":[5,2],"text":"a\"b","score":-0.5}]})");
}
