// Unicode normalization forms (UAX #15) as Hugging Face `tokenizers` applies
// them in its NFC / NFD / NFKC / NFKD normalizers: with Unicode 9.0's data,
// as its unicode-normalization-alignments crate has it, so characters
// assigned later pass through untouched (NormalizationTables.inc,
// runtime/text/gen_normalization_tables.py).
#pragma once
#include <cstdint>
#include <string>

namespace genrt {
namespace text {

enum class NormalForm { NFC, NFD, NFKC, NFKD };

/// "NFC", "NFD", "NFKC" or "NFKD" (a tokenizer.json normalizer's type).
bool normalFormNamed(const std::string &name, NormalForm &out);

/// `s` in the normal form. Bytes that are not well-formed UTF-8 are copied
/// as they are, and nothing reorders or composes across them.
std::string normalize(const std::string &s, NormalForm form);

/// Canonical_Combining_Class (0 for characters after Unicode 9.0).
uint8_t combiningClass(char32_t c);

} // namespace text
} // namespace genrt
