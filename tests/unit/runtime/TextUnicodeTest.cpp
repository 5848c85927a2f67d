// The runtime tokenizer's building blocks on cases HF's behaviour hinges on:
// Rust's lossy UTF-8 decoding, grapheme clusters (SentencePiece's
// precompiled normalizer works per cluster), and the regex subset.
#include "runtime/text/Regex.h"
#include "runtime/text/Unicode.h"

#include <gtest/gtest.h>

using namespace genrt::text;

static const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(utf8Lossy("\xF0\x9F\x98" "A"), kFffd + "A");          // a truncated 4-byte sequence: one
  EXPECT_EQ(utf8Lossy("\xE0\x80"), kFffd + kFffd);                // overlong lead, then a lone continuation
  EXPECT_EQ(utf8Lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);     // a surrogate: three
  EXPECT_EQ(utf8Lossy("\xC3\xA9\xFF"), "\xC3\xA9" + kFffd);
  size_t bad = 0;
  EXPECT_FALSE(isValidUtf8("ok\xC0\xAF", &bad));
  EXPECT_EQ(bad, 2u);
}

static size_t clusters(const std::string &s) { return graphemeBoundaries(decodeUtf8(s)).size() - 1; }

TEST(Graphemes, ExtendedClusters) {
  EXPECT_EQ(clusters("e\xCC\x81"), 1u);                                            // e + combining acute
  EXPECT_EQ(clusters("\r\n"), 1u);
  EXPECT_EQ(clusters("\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7"), 2u); // two flags
  EXPECT_EQ(clusters("\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7"), 1u); // ZWJ family
  EXPECT_EQ(clusters("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), 1u);                 // Hangul L V T
  EXPECT_EQ(clusters("ab"), 2u);
}

static std::vector<std::string> split(const Regex &r, const std::string &s) {
  std::vector<std::string> out;
  for (const Regex::Piece &p : r.findMatches(s))
    out.push_back((p.isMatch ? "+" : "-") + s.substr(p.begin, p.end - p.begin));
  return out;
}

TEST(Regex, Gpt2Pattern) {
  Regex r;
  ASSERT_TRUE(Regex::compile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", r).isOk());
  // The whitespace before a word stays apart from it, but for one space.
  EXPECT_EQ(split(r, "it's  12 x!"), (std::vector<std::string>{"+it", "+'s", "+ ", "+ 12", "+ x", "+!"}));
}

TEST(Regex, CaseInsensitiveFoldsLongS) {
  Regex r;
  ASSERT_TRUE(Regex::compile("(?i:'s|'t)|\\p{N}{1,3}", r).isOk());
  EXPECT_EQ(split(r, "'S'\xC5\xBF" "12345"), (std::vector<std::string>{"+'S", "+'\xC5\xBF", "+123", "+45"}));
}

TEST(Regex, RefusesWhatItDoesNotImplement) {
  Regex r;
  EXPECT_FALSE(Regex::compile("(a)\\1", r).isOk());      // backreference
  EXPECT_FALSE(Regex::compile("(?:ab)+", r).isOk());     // unbounded group repeat
  EXPECT_FALSE(Regex::compile("a++", r).isOk());         // possessive
  EXPECT_FALSE(Regex::compile("\\p{Greek}", r).isOk());  // a property without a table
  EXPECT_TRUE(Regex::compile("(?:ab){2}c", r).isOk());
  EXPECT_EQ(split(r, "xababcz"), (std::vector<std::string>{"-x", "+ababc", "-z"}));
}
