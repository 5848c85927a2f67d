// NFC / NFD / NFKC / NFKD against Unicode's own conformance file,
// NormalizationTest.txt (Debian's unicode-data, which tools/setup.sh
// installs: Unicode 15.0), read where the system has it. The runtime
// normalizes with Unicode 9.0's data, as Hugging Face tokenizers does, so
// lines holding a character assigned later (DerivedAge.txt) are left out,
// and such characters must come through unchanged. tests/text/ checks the
// same forms against Hugging Face itself.
#include "runtime/text/Normalize.h"
#include "runtime/text/Unicode.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_set>
#include <vector>

using namespace genrt::text;

namespace {

const char *kUcd = "/usr/share/unicode";

// The file's text: plain where a system ships it so, else Debian's .bz2
// through bzip2 (empty when neither is there).
std::string readNormalizationTest() {
  std::string plain = std::string(kUcd) + "/NormalizationTest.txt";
  if (std::ifstream f(plain); f) {
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::string bz2 = plain + ".bz2";
  if (!std::ifstream(bz2))
    return "";
  std::string text;
  if (FILE *p = popen(("bzip2 -dc '" + bz2 + "' 2>/dev/null").c_str(), "r")) {
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;)
      text.append(buf, n);
    pclose(p);
  }
  return text;
}

// Code points assigned after Unicode 9.0, from DerivedAge.txt.
std::unordered_set<char32_t> assignedAfter9() {
  std::unordered_set<char32_t> out;
  std::ifstream f(std::string(kUcd) + "/DerivedAge.txt");
  for (std::string line; std::getline(f, line);) {
    line = line.substr(0, line.find('#'));
    size_t semi = line.find(';');
    if (semi == std::string::npos)
      continue;
    unsigned lo = 0, hi = 0, major = 0;
    std::string range = line.substr(0, semi);
    if (std::sscanf(range.c_str(), "%x..%x", &lo, &hi) < 2)
      hi = lo;
    if (std::sscanf(line.c_str() + semi + 1, " %u", &major) == 1 && major > 9)
      for (unsigned c = lo; c <= hi; ++c)
        out.insert(c);
  }
  return out;
}

std::string utf8(const std::vector<char32_t> &cps) { return encodeUtf8(std::u32string(cps.begin(), cps.end())); }

std::vector<char32_t> field(const std::string &f) {
  std::vector<char32_t> cps;
  std::istringstream in(f);
  for (unsigned c; in >> std::hex >> c;)
    cps.push_back(c);
  return cps;
}

std::string show(const std::string &s) {
  std::string out;
  for (char32_t c : decodeUtf8(s)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%04X", out.empty() ? "" : " ", unsigned(c));
    out += buf;
  }
  return out;
}

const NormalForm kForms[] = {NormalForm::NFC, NormalForm::NFD, NormalForm::NFKC, NormalForm::NFKD};
const char *kNames[] = {"NFC", "NFD", "NFKC", "NFKD"};

} // namespace

TEST(Normalize, UnicodeConformanceFile) {
  const std::string text = readNormalizationTest();
  if (text.empty()) {
    if (std::ifstream(std::string(kUcd) + "/NormalizationTest.txt.bz2"))
      FAIL() << kUcd << "/NormalizationTest.txt.bz2 is there but bzip2 -dc gave nothing";
    GTEST_SKIP() << "no " << kUcd << "/NormalizationTest.txt(.bz2): install Debian's unicode-data (tools/setup.sh does)";
  }
  const std::unordered_set<char32_t> later = assignedAfter9();
  ASSERT_GT(later.size(), 10000u) << "cannot read " << kUcd << "/DerivedAge.txt";

  std::istringstream in(text);
  bool part1 = false;
  std::unordered_set<char32_t> listed; // Part 1's characters; all others are invariant
  size_t checked = 0, newer = 0, failures = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("@Part", 0) == 0) {
      part1 = line.rfind("@Part1", 0) == 0;
      continue;
    }
    line = line.substr(0, line.find('#'));
    std::vector<std::vector<char32_t>> c;
    std::istringstream fields(line);
    for (std::string f; c.size() < 5 && std::getline(fields, f, ';');)
      c.push_back(field(f));
    if (c.size() < 5 || c[0].empty())
      continue;
    if (part1)
      listed.insert(c[0][0]);
    bool isNew = false;
    for (const auto &f : c)
      for (char32_t cp : f)
        isNew = isNew || later.count(cp);
    if (isNew) {
      ++newer;
      // To Hugging Face a character after 9.0 has no decomposition and
      // class 0: alone, it stays as it is.
      if (part1) {
        for (int k = 0; k < 4; ++k)
          EXPECT_EQ(show(normalize(utf8(c[0]), kForms[k])), show(utf8(c[0]))) << kNames[k];
      }
      continue;
    }
    ++checked;
    // UAX #15's conformance conditions: NFC(c1..c3) = c2, NFC(c4, c5) = c4,
    // NFD(c1..c3) = c3, NFD(c4, c5) = c5, NFKC(any) = c4, NFKD(any) = c5.
    const int want[4][5] = {{1, 1, 1, 3, 3}, {2, 2, 2, 4, 4}, {3, 3, 3, 3, 3}, {4, 4, 4, 4, 4}};
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 5; ++i) {
        std::string got = normalize(utf8(c[i]), kForms[k]), expect = utf8(c[want[k][i]]);
        if (got != expect && ++failures <= 20)
          ADD_FAILURE() << kNames[k] << "(c" << i + 1 << " = " << show(utf8(c[i])) << ") = " << show(got)
                        << ", want c" << want[k][i] + 1 << " = " << show(expect);
      }
  }
  EXPECT_EQ(failures, 0u);
  // 15.0's file has 19,074 lines, 786 of them with a character after 9.0.
  EXPECT_GT(checked, 18000u);
  EXPECT_GT(newer, 100u);

  size_t invariant = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if ((c >= 0xD800 && c <= 0xDFFF) || listed.count(c))
      continue;
    std::string s;
    appendUtf8(s, c);
    for (int k = 0; k < 4; ++k)
      if (normalize(s, kForms[k]) != s && ++failures <= 20)
        ADD_FAILURE() << kNames[k] << "(" << show(s) << ") changes it; the file lists it as invariant";
    ++invariant;
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(invariant, 1000000u);
  std::printf("NormalizationTest.txt: %zu lines checked, %zu with characters after 9.0; %zu invariant characters\n",
              checked, newer, invariant);
}

TEST(Normalize, HangulByArithmetic) {
  const std::string ga = "\xEA\xB0\x80", gag = "\xEA\xB0\x81";                 // U+AC00, U+AC01
  const std::string g = "\xE1\x84\x80", a = "\xE1\x85\xA1", k = "\xE1\x86\xA8"; // L, V, T jamo
  const std::string t0 = "\xE1\x86\xA7";                                        // U+11A7: no trailing consonant
  EXPECT_EQ(normalize(gag, NormalForm::NFD), g + a + k);
  EXPECT_EQ(normalize(g + a + k, NormalForm::NFC), gag);
  EXPECT_EQ(normalize(ga + k, NormalForm::NFC), gag);
  EXPECT_EQ(normalize(ga + t0, NormalForm::NFC), ga + t0);
  EXPECT_EQ(normalize(g + "\xCC\x81" + a, NormalForm::NFC), g + "\xCC\x81" + a); // a mark between blocks
  EXPECT_EQ(normalize("\xE3\x84\xB1", NormalForm::NFKC), g);                    // compatibility jamo U+3131
}

TEST(Normalize, BytesOutsideUtf8PassThroughAndBlock) {
  // Callers validate (Tokenizer::encode), but a stray byte is kept as it is,
  // as the other normalizers keep bytes: never read as Latin-1 (0xC3 is not
  // U+00C3, which NFD would split) and never composed across.
  EXPECT_EQ(normalize("\xC3", NormalForm::NFD), "\xC3");
  EXPECT_EQ(normalize("e\xFF\xCC\x81", NormalForm::NFC), "e\xFF\xCC\x81");
  EXPECT_EQ(normalize("e\xCC\x81\xFF", NormalForm::NFC), "\xC3\xA9\xFF");
  EXPECT_EQ(normalize("\xED\xA0\x80\xC3\xA9", NormalForm::NFD), "\xED\xA0\x80" "e\xCC\x81"); // a surrogate
  EXPECT_EQ(normalize("\xEF\xAC", NormalForm::NFKC), "\xEF\xAC");                            // U+FB01, cut short
}

TEST(Normalize, CharactersAfterUnicode9AreLeftAlone) {
  // U+1E4EC (Unicode 15.0, class 232 there) does not move before U+0316 (220),
  // and U+11935 U+11930 (13.0) do not compose to U+11938, as in HF.
  EXPECT_EQ(normalize("a\xF0\x9E\x93\xAC\xCC\x96", NormalForm::NFD), "a\xF0\x9E\x93\xAC\xCC\x96");
  EXPECT_EQ(normalize("\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0", NormalForm::NFC), "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0");
  EXPECT_EQ(combiningClass(0x1E4EC), 0);
  EXPECT_EQ(combiningClass(0x0316), 220);
}

TEST(Normalize, FormNames) {
  NormalForm f;
  ASSERT_TRUE(normalFormNamed("NFKD", f));
  EXPECT_EQ(f, NormalForm::NFKD);
  EXPECT_FALSE(normalFormNamed("nfc", f));
  EXPECT_FALSE(normalFormNamed("NFKC_Casefold", f));
}
