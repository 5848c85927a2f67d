#include "runtime/text/Unicode.h"

#include <algorithm>

namespace genrt {
namespace text {
namespace {

enum : uint8_t { kLetter = 1, kNumber = 2, kSpace = 4, kMark = 8, kConnector = 16, kPicto = 32, kDecimal = 64 };
enum Gcb : uint8_t { Other, CR, LF, Control, Extend, ZWJ, RegionalIndicator, Prepend, SpacingMark,
                     L, V, T, LV, LVT };

struct Range {
  char32_t first, last;
  uint8_t bits, gcb;
};

const Range kRanges[] = {
#include "runtime/text/UnicodeTables.inc"
};

const Range &lookup(char32_t c) {
  static const Range kNone{0, 0, 0, Other};
  if (c > 0x10FFFF)
    return kNone;
  // The table covers every code point in order: the range holding c is the
  // last one starting at or before it.
  const Range *r = std::upper_bound(std::begin(kRanges), std::end(kRanges), c,
                                    [](char32_t v, const Range &x) { return v < x.first; });
  return *(r - 1);
}

} // namespace

size_t utf8Length(unsigned char b) {
  return b < 0x80 ? 1 : b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? (b < 0xF0 ? 3 : 1) : b >= 0xC2 ? 2 : 1;
}

// One well-formed sequence at s[i]: its length, or 0. The second byte's
// bounds exclude overlongs, surrogates and code points past U+10FFFF.
static size_t validAt(const std::string &s, size_t i, size_t *goodCont = nullptr) {
  unsigned char b = s[i];
  if (b < 0x80)
    return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    lo = b == 0xE0 ? 0xA0 : 0x80;
    hi = b == 0xED ? 0x9F : 0xBF;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    lo = b == 0xF0 ? 0x90 : 0x80;
    hi = b == 0xF4 ? 0x8F : 0xBF;
  } else {
    if (goodCont)
      *goodCont = 0;
    return 0;
  }
  size_t k = 0;
  for (; k < need && i + 1 + k < s.size(); ++k) {
    unsigned char c = s[i + 1 + k];
    if (k == 0 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF))
      break;
  }
  if (goodCont)
    *goodCont = k;
  return k == need ? need + 1 : 0;
}

size_t validUtf8At(const std::string &s, size_t i) { return validAt(s, i); }

bool isValidUtf8(const std::string &s, size_t *badAt) {
  for (size_t i = 0; i < s.size();) {
    size_t n = validAt(s, i);
    if (!n) {
      if (badAt)
        *badAt = i;
      return false;
    }
    i += n;
  }
  return true;
}

std::string utf8Lossy(const std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t goodCont = 0;
    size_t n = validAt(s, i, &goodCont);
    if (n) {
      out.append(s, i, n);
      i += n;
    } else {
      // A maximal subpart: the lead byte and the continuation bytes that
      // were still possible, replaced by one U+FFFD.
      out += "\xEF\xBF\xBD";
      i += 1 + goodCont;
    }
  }
  return out;
}

std::vector<char32_t> decodeUtf8(const std::string &s, std::vector<size_t> *offsets) {
  std::vector<char32_t> cps;
  cps.reserve(s.size());
  if (offsets)
    offsets->clear();
  for (size_t i = 0; i < s.size();) {
    unsigned char b = s[i];
    size_t n = utf8Length(b);
    if (i + n > s.size())
      n = 1;
    char32_t c = n == 1 ? b : b & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k)
      c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (offsets)
      offsets->push_back(i);
    cps.push_back(c);
    i += n;
  }
  if (offsets)
    offsets->push_back(s.size());
  return cps;
}

void appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string encodeUtf8(const std::u32string &cps) {
  std::string out;
  for (char32_t c : cps)
    appendUtf8(out, c);
  return out;
}

bool isLetter(char32_t c) { return lookup(c).bits & kLetter; }
bool isNumber(char32_t c) { return lookup(c).bits & kNumber; }
bool isWhiteSpace(char32_t c) { return lookup(c).bits & kSpace; }
bool isDecimal(char32_t c) { return lookup(c).bits & kDecimal; }
bool isMark(char32_t c) { return lookup(c).bits & kMark; }
bool isWordChar(char32_t c) { return lookup(c).bits & (kLetter | kMark | kNumber | kConnector); }

char32_t foldCase(char32_t c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7))
    return c + 32;
  if (c == 0x17F)
    return 's';
  if (c == 0x212A)
    return 'k';
  return c;
}

std::vector<size_t> graphemeBoundaries(const std::vector<char32_t> &cps) {
  std::vector<size_t> starts;
  size_t n = cps.size();
  if (n == 0) {
    starts.push_back(0);
    return starts;
  }
  std::vector<uint8_t> g(n);
  std::vector<bool> pict(n);
  for (size_t i = 0; i < n; ++i) {
    const Range &r = lookup(cps[i]);
    g[i] = r.gcb;
    pict[i] = r.bits & kPicto;
  }
  starts.push_back(0);
  size_t riRun = 0; // regional indicators in a row ending at i - 1
  // pictExt[j]: the text up to j ends with Extended_Pictographic Extend* (GB11).
  std::vector<bool> pictExt(n);
  pictExt[0] = pict[0];
  for (size_t i = 1; i < n; ++i) {
    uint8_t a = g[i - 1], b = g[i];
    riRun = a == RegionalIndicator ? riRun + 1 : 0;
    pictExt[i] = pict[i] || (b == Extend && pictExt[i - 1]);
    bool join;
    if (a == CR && b == LF)
      join = true; // GB3
    else if (a == Control || a == CR || a == LF || b == Control || b == CR || b == LF)
      join = false; // GB4, GB5
    else if (a == L && (b == L || b == V || b == LV || b == LVT))
      join = true; // GB6
    else if ((a == LV || a == V) && (b == V || b == T))
      join = true; // GB7
    else if ((a == LVT || a == T) && b == T)
      join = true; // GB8
    else if (b == Extend || b == ZWJ || b == SpacingMark || a == Prepend)
      join = true; // GB9, GB9a, GB9b
    else if (a == ZWJ && pict[i] && i >= 2 && pictExt[i - 2])
      join = true; // GB11
    else if (a == RegionalIndicator && b == RegionalIndicator)
      join = riRun % 2 == 1; // GB12, GB13
    else
      join = false; // GB999
    if (!join)
      starts.push_back(i);
  }
  starts.push_back(n);
  return starts;
}

} // namespace text
} // namespace genrt
