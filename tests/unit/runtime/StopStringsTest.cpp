// StopStrings against transformers' StopStringCriteria: every row of
// StopStringsGolden.inc (tests/unit/runtime/make_stop_golden.py, HF's own class on
// models/tiny-gpt2's byte-level tokenizer) and of
// StopStringsGoldenByteFallback.inc / StopStringsGoldenUnigram.inc (the same on
// a Llama-2-style byte-fallback and a T5-style Unigram tokenizer,
// tests/fixtures/tokenizers/) gets HF's verdict; then
// the rule's edges spelled out, and the two-part form beam search uses.
#include "runtime/search/StopStrings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <sstream>

using namespace genrt;
using genrt::search::StopStrings;

namespace {

// Rows of plain arrays (the lists' backing arrays live as long as the table):
// as std::vector / std::string aggregates the 10,000 rows took gcc over ten
// minutes to compile, at -O0 as at -O3.
struct Golden {
  std::initializer_list<const char *> stopList;
  std::initializer_list<int64_t> idList;
  bool hit;
  std::vector<std::string> stops() const { return {stopList.begin(), stopList.end()}; }
  std::vector<int64_t> ids() const { return idList; }
};

const Golden kCases[] = {
#include "StopStringsGolden.inc"
};
const Golden kByteFallbackCases[] = {
#include "StopStringsGoldenByteFallback.inc"
};
const Golden kUnigramCases[] = {
#include "StopStringsGoldenUnigram.inc"
};

std::unique_ptr<text::Tokenizer> tokenizerAt(const std::string &path) {
  std::ifstream f(std::string(GENC_SOURCE_DIR) + "/" + path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::unique_ptr<text::Tokenizer> tok;
  Status s = text::Tokenizer::fromJson(ss.str(), tok);
  EXPECT_TRUE(s) << path << ": " << s.message();
  return tok;
}

std::unique_ptr<text::Tokenizer> tinyGpt2() { return tokenizerAt("models/tiny-gpt2/tokenizer.json"); }

// Every row of a table on the tokenizer at `path`, in the whole-sequence form
// and beam search's split form; the table has `rows` rows and exercises
// matches, not only misses.
template <size_t N>
void expectGolden(const std::string &path, const Golden (&cases)[N], int rows) {
  std::unique_ptr<text::Tokenizer> tok = tokenizerAt(path);
  ASSERT_TRUE(tok);
  int hits = 0, checked = 0;
  for (const Golden &g : cases) {
    const std::vector<int64_t> ids = g.ids();
    StopStrings stop(g.stops(), tok.get());
    EXPECT_EQ(stop.hits(ids), g.hit) << "stop '" << *g.stopList.begin() << "', case " << checked;
    // Beam search's form: the prompt, the beam's tokens, the candidate.
    if (ids.size() >= 2) {
      const size_t cut = ids.size() / 2;
      std::vector<int64_t> head(ids.begin(), ids.begin() + cut), mid(ids.begin() + cut, ids.end() - 1);
      EXPECT_EQ(stop.hits(head, mid, ids.back()), g.hit) << "split form, case " << checked;
    }
    hits += g.hit;
    ++checked;
  }
  EXPECT_GT(hits, 100);
  EXPECT_EQ(checked, rows);
}

TEST(StopStrings, EveryGoldenRowAsHuggingFaceDecides) {
  expectGolden("models/tiny-gpt2/tokenizer.json", kCases, 2752);
}

// Byte fallback: HF reads a <0xXX> piece as its byte, other pieces by their
// text after "abcdef" ("▁" as a space).
TEST(StopStrings, EveryGoldenRowAsHuggingFaceDecidesUnderByteFallback) {
  expectGolden("tests/fixtures/tokenizers/byte-fallback/tokenizer.json", kByteFallbackCases, 3552);
}

// Neither byte-level nor byte fallback (a T5-style Unigram): every piece by
// its text after "abcdef".
TEST(StopStrings, EveryGoldenRowAsHuggingFaceDecidesForAUnigramVocabulary) {
  expectGolden("tests/fixtures/tokenizers/unigram/tokenizer.json", kUnigramCases, 3570);
}

// HF refuses a set when no token can end any of its strings (the sets
// tests/unit/runtime/make_stop_golden.py found refused); every set of the tables it
// accepted passes.
TEST(StopStrings, RefusedAsHuggingFaceRefusesThem) {
  std::unique_ptr<text::Tokenizer> uni = tokenizerAt("tests/fixtures/tokenizers/unigram/tokenizer.json");
  ASSERT_TRUE(uni);
  for (const char *s : {"\303\274", "\360\237\230\200"}) {
    Status st = StopStrings::check({s}, *uni);
    EXPECT_FALSE(st) << s;
    EXPECT_NE(st.message().find("Hugging Face refuses them too"), std::string::npos);
  }
  EXPECT_TRUE(StopStrings::check({"\303\274", "license"}, *uni)); // one string that can end is enough
  for (const Golden &g : kUnigramCases)
    ASSERT_TRUE(StopStrings::check(g.stops(), *uni)) << *g.stopList.begin();
  std::unique_ptr<text::Tokenizer> gpt2 = tinyGpt2(); // byte-level: every byte is a token
  ASSERT_TRUE(gpt2);
  EXPECT_TRUE(StopStrings::check({"\360\237\230\200"}, *gpt2));
  for (const Golden &g : kCases)
    ASSERT_TRUE(StopStrings::check(g.stops(), *gpt2)) << *g.stopList.begin();
}

TEST(StopStrings, TheStringMustReachIntoTheLastToken) {
  std::unique_ptr<text::Tokenizer> tok = tinyGpt2();
  ASSERT_TRUE(tok);
  std::vector<int64_t> ids;
  ASSERT_TRUE(tok->encode("a copyright license granted", false, ids));
  StopStrings stop({"license"}, tok.get());
  // The whole text ends past "license": no hit at the end ...
  EXPECT_FALSE(stop.hits(ids));
  // ... but at the token that completes it.
  std::vector<int64_t> upTo;
  bool seen = false;
  for (int64_t id : ids) {
    upTo.push_back(id);
    seen = seen || stop.hits(upTo);
    if (tok->decode(upTo, false).find("license") != std::string::npos) {
      EXPECT_TRUE(stop.hits(upTo)) << tok->decode(upTo, false);
      break;
    }
  }
  EXPECT_TRUE(seen);
  StopStrings none({}, nullptr);
  EXPECT_FALSE(none.hits(ids));
}

} // namespace
