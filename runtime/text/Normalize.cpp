// UAX #15: decompose each character fully (canonical or compatibility),
// put every run of non-starters in canonical order, then (NFC, NFKC)
// compose each character with the last starter unless something between
// blocks it.
#include "runtime/text/Normalize.h"

#include "runtime/text/Unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

namespace genrt {
namespace text {
namespace {

struct CombiningRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  uint16_t offset; // into kDecompositionPool
  uint8_t length;
};
struct Composition {
  char32_t first, second, composite;
};

#include "runtime/text/NormalizationTables.inc"

// Hangul syllables are arithmetic, not tables (Unicode 15.0, section 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// A byte outside well-formed UTF-8 travels as a value past U+10FFFF: a
// starter that nothing decomposes or composes with, so the text around it
// is normalized on either side of it and the byte itself is written back.
constexpr char32_t kRawByte = 0x110000;

const Decomposition *findDecomposition(const Decomposition *begin, const Decomposition *end, char32_t c) {
  const Decomposition *d =
      std::lower_bound(begin, end, c, [](const Decomposition &x, char32_t v) { return x.cp < v; });
  return d != end && d->cp == c ? d : nullptr;
}

void decompose(char32_t c, bool compat, std::vector<char32_t> &out) {
  if (c - kSBase < kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + s % kNCount / kTCount);
    if (s % kTCount)
      out.push_back(kTBase + s % kTCount);
    return;
  }
  // The compatibility table holds only what differs from the canonical one.
  const Decomposition *d = compat ? findDecomposition(std::begin(kCompatibility), std::end(kCompatibility), c) : nullptr;
  if (!d)
    d = findDecomposition(std::begin(kCanonical), std::end(kCanonical), c);
  if (!d) {
    out.push_back(c);
    return;
  }
  out.insert(out.end(), kDecompositionPool + d->offset, kDecompositionPool + d->offset + d->length);
}

// The primary composite of a and b, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a - kLBase < kLCount && b - kVBase < kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  // kTBase itself is no trailing consonant: LV + U+11A7 stays two characters.
  if (a - kSBase < kSCount && (a - kSBase) % kTCount == 0 && b - kTBase - 1 < kTCount - 1)
    return a + (b - kTBase);
  const Composition *c = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::make_pair(a, b),
                                          [](const Composition &x, const std::pair<char32_t, char32_t> &v) {
                                            return x.first != v.first ? x.first < v.first : x.second < v.second;
                                          });
  return c != std::end(kCompositions) && c->first == a && c->second == b ? c->composite : 0;
}

char32_t decodeAt(const std::string &s, size_t i, size_t n) {
  const unsigned char lead = s[i];
  char32_t c = n == 1 ? lead : lead & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k)
    c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return c;
}

} // namespace

bool normalFormNamed(const std::string &name, NormalForm &out) {
  static const std::pair<const char *, NormalForm> kNames[] = {
      {"NFC", NormalForm::NFC}, {"NFD", NormalForm::NFD}, {"NFKC", NormalForm::NFKC}, {"NFKD", NormalForm::NFKD}};
  for (const auto &[n, f] : kNames)
    if (name == n) {
      out = f;
      return true;
    }
  return false;
}

uint8_t combiningClass(char32_t c) {
  const CombiningRange *r =
      std::upper_bound(std::begin(kCombiningClasses), std::end(kCombiningClasses), c,
                       [](char32_t v, const CombiningRange &x) { return v < x.first; });
  return r != std::begin(kCombiningClasses) && c <= (r - 1)->last ? (r - 1)->ccc : 0;
}

std::string normalize(const std::string &s, NormalForm form) {
  // No ASCII character decomposes, has a class, or is the second of a pair.
  if (std::all_of(s.begin(), s.end(), [](char b) { return static_cast<unsigned char>(b) < 0x80; }))
    return s;
  const bool compat = form == NormalForm::NFKC || form == NormalForm::NFKD;
  const bool composing = form == NormalForm::NFC || form == NormalForm::NFKC;

  std::vector<char32_t> cps;
  cps.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = validUtf8At(s, i);
    if (!n) {
      cps.push_back(kRawByte + static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    decompose(decodeAt(s, i, n), compat, cps);
    i += n;
  }

  // Canonical ordering: a stable sort of each run of non-starters by class
  // (a sort, not UAX #15's pairwise swaps, so a long run costs n log n).
  std::vector<uint8_t> cls(cps.size());
  for (size_t i = 0; i < cps.size(); ++i)
    cls[i] = combiningClass(cps[i]);
  std::vector<std::pair<uint8_t, char32_t>> run;
  for (size_t i = 0; i < cps.size();) {
    if (!cls[i]) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < cps.size() && cls[end])
      ++end;
    if (end - i > 1) {
      run.clear();
      for (size_t k = i; k < end; ++k)
        run.emplace_back(cls[k], cps[k]);
      std::stable_sort(run.begin(), run.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
      for (size_t k = i; k < end; ++k)
        std::tie(cls[k], cps[k]) = run[k - i];
    }
    i = end;
  }

  if (composing) {
    // The text is in canonical order, so the last character kept is the one
    // that could block: a starter right before, or a class >= this one's.
    size_t starter = SIZE_MAX, kept = 0;
    for (size_t r = 0; r < cps.size(); ++r) {
      const char32_t c = cps[r];
      const uint8_t k = cls[r];
      if (starter != SIZE_MAX && (kept == starter + 1 || cls[kept - 1] < k)) {
        if (char32_t composite = compose(cps[starter], c)) {
          cps[starter] = composite;
          continue;
        }
      }
      if (!k)
        starter = kept;
      cps[kept] = c;
      cls[kept] = k;
      ++kept;
    }
    cps.resize(kept);
  }

  std::string out;
  out.reserve(s.size());
  for (char32_t c : cps) {
    if (c >= kRawByte)
      out += static_cast<char>(c - kRawByte);
    else
      appendUtf8(out, c);
  }
  return out;
}

} // namespace text
} // namespace genrt
