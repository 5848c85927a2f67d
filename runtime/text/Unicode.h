// UTF-8 and the few Unicode properties the tokenizers need: what Hugging Face
// `tokenizers` (Rust, with Oniguruma regexes) sees, from the Unicode 15.0
// tables in UnicodeTables.inc (runtime/text/gen_unicode_tables.py).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace genrt {
namespace text {

/// True when `s` is well-formed UTF-8 (no surrogates, overlongs or code
/// points past U+10FFFF). On failure `badAt` is the offending byte offset.
bool isValidUtf8(const std::string &s, size_t *badAt = nullptr);

/// Decodes well-formed UTF-8 (callers validate first) into code points;
/// `offsets` (when given) gets each code point's byte offset, plus s.size().
std::vector<char32_t> decodeUtf8(const std::string &s, std::vector<size_t> *offsets = nullptr);
void appendUtf8(std::string &out, char32_t c);
std::string encodeUtf8(const std::u32string &cps);
/// Length in bytes of the UTF-8 sequence led by byte `lead` (1 for a bad lead).
size_t utf8Length(unsigned char lead);
/// Length of the well-formed UTF-8 sequence at s[i], or 0 when it is not one.
size_t validUtf8At(const std::string &s, size_t i);

/// Rust's String::from_utf8_lossy: every maximal invalid subpart becomes one
/// U+FFFD, so the byte-level decoders produce exactly the text HF produces.
std::string utf8Lossy(const std::string &bytes);

bool isLetter(char32_t c);     // General_Category L
bool isNumber(char32_t c);     // General_Category N
bool isDecimal(char32_t c);    // General_Category Nd (Oniguruma's \d)
bool isWhiteSpace(char32_t c); // White_Space (Oniguruma's \s, Rust's char::is_whitespace)
bool isMark(char32_t c);       // General_Category M
bool isWordChar(char32_t c);   // \w: L, M, N or Pc

/// Oniguruma's simple case folding, enough for the (?i:...) patterns of
/// real tokenizers: ASCII, Latin-1 and the few non-ASCII letters that fold
/// onto ASCII (U+017F LONG S -> s, U+212A KELVIN -> k).
char32_t foldCase(char32_t c);

/// Splits code points into extended grapheme clusters (UAX #29, Unicode
/// 15.0): returns the index where each cluster starts, plus cps.size().
std::vector<size_t> graphemeBoundaries(const std::vector<char32_t> &cps);

} // namespace text
} // namespace genrt
