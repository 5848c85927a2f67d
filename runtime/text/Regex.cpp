#include "runtime/text/Regex.h"

#include "runtime/text/Unicode.h"

#include <cctype>
#include <cstdint>

namespace genrt {
namespace text {

namespace {

enum class Prop : uint8_t { None, Letter, Number, Decimal, Mark, Space, Word, Any, NotNewline };

bool hasProp(Prop p, char32_t c) {
  switch (p) {
  case Prop::Letter: return isLetter(c);
  case Prop::Number: return isNumber(c);
  case Prop::Decimal: return isDecimal(c);
  case Prop::Mark: return isMark(c);
  case Prop::Space: return isWhiteSpace(c);
  case Prop::Word: return isWordChar(c);
  case Prop::Any: return true;
  case Prop::NotNewline: return c != '\n';
  case Prop::None: return false;
  }
  return false;
}

struct ClassItem {
  char32_t lo = 0, hi = 0; // a range when prop is None
  Prop prop = Prop::None;
  bool negated = false;    // \S, \P{L}, ...
};

struct CharClass {
  std::vector<ClassItem> items;
  bool negated = false;
  bool fold = false;

  bool matches(char32_t c) const {
    bool in = false;
    for (const ClassItem &it : items) {
      bool hit;
      if (it.prop != Prop::None)
        hit = hasProp(it.prop, c) != it.negated;
      else if (fold && it.lo == it.hi)
        hit = foldCase(c) == foldCase(it.lo);
      else
        hit = c >= it.lo && c <= it.hi;
      if (hit) {
        in = true;
        break;
      }
    }
    return in != negated;
  }
};

} // namespace

struct Regex::Node {
  enum Kind { Set, Group, Repeat, Ahead, NotAhead, LineStart, LineEnd, TextStart, TextEnd } kind = Set;
  CharClass set;
  // Group: one sequence per alternative. Repeat / lookaheads: alts[0] is the body.
  std::vector<std::vector<Node>> alts;
  int min = 0, max = -1; // Repeat; max -1: unbounded
  bool greedy = true;
};

namespace {

using Node = Regex::Node;
using Seq = std::vector<Node>;

constexpr int kMaxGroupRepeat = 16;

class Parser {
public:
  explicit Parser(const std::string &pattern) : p_(decodeUtf8(pattern)) {}

  Status parse(Seq &out) {
    Node g;
    if (Status s = parseAlternatives(g, false); !s)
      return s;
    if (i_ < p_.size())
      return err("unbalanced ')'");
    out.push_back(std::move(g));
    return Status::ok();
  }

private:
  Status err(const std::string &m) const {
    return Status::error("regex: " + m + " at offset " + std::to_string(i_));
  }
  bool more() const { return i_ < p_.size(); }
  char32_t peek() const { return more() ? p_[i_] : 0; }

  // alternatives until ')' (not consumed) or the end.
  Status parseAlternatives(Node &group, bool fold) {
    group.kind = Node::Group;
    group.alts.emplace_back();
    while (more() && peek() != ')') {
      if (peek() == '|') {
        ++i_;
        group.alts.emplace_back();
        continue;
      }
      if (Status s = parseQuantified(group.alts.back(), fold); !s)
        return s;
    }
    return Status::ok();
  }

  Status parseQuantified(Seq &seq, bool &fold) {
    size_t before = seq.size();
    if (Status s = parseAtom(seq, fold); !s)
      return s;
    if (seq.size() == before)
      return Status::ok(); // a flag group like (?i)
    int min, max;
    if (peek() == '*') {
      min = 0, max = -1, ++i_;
    } else if (peek() == '+') {
      min = 1, max = -1, ++i_;
    } else if (peek() == '?') {
      min = 0, max = 1, ++i_;
    } else if (peek() == '{' && parseBraces(min, max)) {
    } else {
      return Status::ok();
    }
    Node &atom = seq.back();
    if (atom.kind != Node::Set && atom.kind != Node::Group)
      return err("a quantifier must follow a character, class or group");
    if (atom.kind == Node::Group && (max < 0 || max > kMaxGroupRepeat))
      return err("a repeated group needs a bound of at most " + std::to_string(kMaxGroupRepeat));
    Node rep;
    rep.kind = Node::Repeat;
    rep.min = min;
    rep.max = max;
    if (peek() == '?') {
      rep.greedy = false;
      ++i_;
    } else if (peek() == '+') {
      return err("possessive quantifiers are not supported");
    }
    rep.alts.emplace_back();
    rep.alts[0].push_back(std::move(atom));
    atom = std::move(rep);
    return Status::ok();
  }

  // {n}, {n,}, {n,m}; false (and nothing consumed) when not a quantifier,
  // where Oniguruma reads '{' as a literal.
  bool parseBraces(int &min, int &max) {
    size_t j = i_ + 1;
    auto number = [&](int &v) {
      size_t s = j;
      v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9' && v < 100000)
        v = v * 10 + int(p_[j++] - '0');
      return j > s;
    };
    if (!number(min))
      return false;
    max = min;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(max))
        max = -1;
    }
    if (j >= p_.size() || p_[j] != '}' || (max >= 0 && max < min))
      return false;
    i_ = j + 1;
    return true;
  }

  Status parseAtom(Seq &seq, bool &fold) {
    char32_t c = p_[i_++];
    Node n;
    switch (c) {
    case '(':
      return parseGroup(seq, fold);
    case '[':
      n.set.fold = fold;
      if (Status s = parseClass(n.set); !s)
        return s;
      break;
    case '.':
      n.set.items.push_back(ClassItem{0, 0, Prop::NotNewline, false});
      break;
    case '^':
      n.kind = Node::LineStart;
      break;
    case '$':
      n.kind = Node::LineEnd;
      break;
    case '\\': {
      if (!more())
        return err("a trailing backslash");
      char32_t e = p_[i_];
      if (e == 'A' || e == 'z') {
        ++i_;
        n.kind = e == 'A' ? Node::TextStart : Node::TextEnd;
        break;
      }
      ClassItem it;
      if (Status s = parseEscape(it); !s)
        return s;
      n.set.items.push_back(it);
      n.set.fold = fold;
      break;
    }
    case '*': case '+': case '?':
      return err("nothing to repeat");
    default:
      n.set.items.push_back(ClassItem{c, c});
      n.set.fold = fold;
    }
    seq.push_back(std::move(n));
    return Status::ok();
  }

  Status parseGroup(Seq &seq, bool &fold) {
    Node n;
    bool innerFold = fold;
    if (peek() == '?') {
      ++i_;
      char32_t k = peek();
      if (k == ':') {
        ++i_;
      } else if (k == '=' || k == '!') {
        ++i_;
        n.kind = k == '=' ? Node::Ahead : Node::NotAhead;
      } else if (k == 'i' || k == '-') {
        bool on = true;
        while (more() && (peek() == 'i' || peek() == '-')) {
          if (peek() == '-')
            on = false;
          else
            innerFold = on;
          ++i_;
        }
        if (peek() == ')') { // (?i): the flag holds to the end of the group
          ++i_;
          fold = innerFold;
          return Status::ok();
        }
        if (peek() != ':')
          return err("unsupported group flags");
        ++i_;
      } else {
        return err("unsupported group '(?" + encodeUtf8(std::u32string(1, k)) + "'");
      }
    }
    Node body;
    if (Status s = parseAlternatives(body, innerFold); !s)
      return s;
    if (peek() != ')')
      return err("missing ')'");
    ++i_;
    if (n.kind == Node::Set) {
      seq.push_back(std::move(body));
    } else {
      n.alts.emplace_back();
      n.alts[0].push_back(std::move(body));
      seq.push_back(std::move(n));
    }
    return Status::ok();
  }

  Status parseClass(CharClass &cls) {
    if (peek() == '^') {
      cls.negated = true;
      ++i_;
    }
    bool first = true;
    while (true) {
      if (!more())
        return err("missing ']'");
      char32_t c = p_[i_];
      if (c == ']' && !first) {
        ++i_;
        return Status::ok();
      }
      first = false;
      if (c == '[')
        return err("nested classes are not supported");
      ClassItem it;
      ++i_;
      if (c == '\\') {
        if (Status s = parseEscape(it); !s)
          return s;
      } else {
        it.lo = it.hi = c;
      }
      if (it.prop == Prop::None && peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        char32_t h = p_[i_++];
        if (h == '\\') {
          ClassItem hi;
          if (Status s = parseEscape(hi); !s)
            return s;
          if (hi.prop != Prop::None)
            return err("a class range ends in a property");
          h = hi.lo;
        }
        if (h < it.lo)
          return err("an empty class range");
        it.hi = h;
      }
      cls.items.push_back(it);
    }
  }

  // After a backslash: a property or one character.
  Status parseEscape(ClassItem &it) {
    if (!more())
      return err("a trailing backslash");
    char32_t e = p_[i_++];
    auto prop = [&](Prop p, bool neg) {
      it.prop = p;
      it.negated = neg;
      return Status::ok();
    };
    switch (e) {
    case 's': return prop(Prop::Space, false);
    case 'S': return prop(Prop::Space, true);
    case 'd': return prop(Prop::Decimal, false);
    case 'D': return prop(Prop::Decimal, true);
    case 'w': return prop(Prop::Word, false);
    case 'W': return prop(Prop::Word, true);
    case 'p': case 'P': {
      if (peek() != '{')
        return err("expected '{' after \\p");
      size_t close = i_;
      while (close < p_.size() && p_[close] != '}')
        ++close;
      if (close == p_.size())
        return err("missing '}' after \\p{");
      std::string name = encodeUtf8(std::u32string(p_.begin() + i_ + 1, p_.begin() + close));
      i_ = close + 1;
      bool neg = e == 'P';
      if (!name.empty() && name[0] == '^') {
        neg = !neg;
        name.erase(0, 1);
      }
      if (name == "L" || name == "Letter")
        return prop(Prop::Letter, neg);
      if (name == "N" || name == "Number")
        return prop(Prop::Number, neg);
      if (name == "Nd" || name == "Decimal_Number")
        return prop(Prop::Decimal, neg);
      if (name == "M" || name == "Mark")
        return prop(Prop::Mark, neg);
      return err("unsupported property \\p{" + name + "}");
    }
    case 'n': it.lo = '\n'; break;
    case 'r': it.lo = '\r'; break;
    case 't': it.lo = '\t'; break;
    case 'f': it.lo = '\f'; break;
    case 'v': it.lo = '\v'; break;
    case 'a': it.lo = 7; break;
    case 'e': it.lo = 27; break;
    case 'x': case 'u': {
      bool braced = e == 'x' && peek() == '{';
      if (braced)
        ++i_;
      size_t digits = 0, maxDigits = braced ? 8 : e == 'x' ? 2 : 4;
      char32_t v = 0;
      while (more() && digits < maxDigits && isxdigit(int(peek() < 128 ? peek() : 0))) {
        char32_t d = peek();
        v = v * 16 + (d <= '9' ? d - '0' : (d | 32) - 'a' + 10);
        ++i_, ++digits;
      }
      if (!digits || (braced && peek() != '}') || v > 0x10FFFF)
        return err("a bad \\x or \\u escape");
      if (braced)
        ++i_;
      it.lo = v;
      break;
    }
    default:
      if ((e >= '0' && e <= '9') || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
        return err("unsupported escape \\" + std::string(1, char(e)));
      it.lo = e; // an escaped punctuation or non-ASCII character stands for itself
    }
    it.hi = it.lo;
    return Status::ok();
  }

  std::vector<char32_t> p_;
  size_t i_ = 0;
};

// Backtracking over code points. A continuation says what to match after the
// current sequence ends: the rest of an enclosing sequence, or the next
// iteration of a repeated group.
struct Cont {
  const Seq *seq;
  size_t idx;
  const Cont *next;
  const Node *rep = nullptr; // a repeat whose body just ended
  int count = 0;             // iterations done, including that one
  size_t start = 0;          // where that iteration began
};

class Matcher {
public:
  explicit Matcher(const std::vector<char32_t> &t) : t_(t) {}

  bool seq(const Seq &s, size_t i, size_t pos, const Cont *k, size_t &end) const {
    for (; i < s.size(); ++i) {
      const Node &n = s[i];
      switch (n.kind) {
      case Node::Set:
        if (pos >= t_.size() || !n.set.matches(t_[pos]))
          return false;
        ++pos;
        continue;
      case Node::LineStart:
        if (pos != 0 && t_[pos - 1] != '\n')
          return false;
        continue;
      case Node::LineEnd:
        if (pos != t_.size() && t_[pos] != '\n')
          return false;
        continue;
      case Node::TextStart:
        if (pos != 0)
          return false;
        continue;
      case Node::TextEnd:
        if (pos != t_.size())
          return false;
        continue;
      case Node::Ahead:
      case Node::NotAhead: {
        size_t ignored;
        if (seq(n.alts[0], 0, pos, nullptr, ignored) != (n.kind == Node::Ahead))
          return false;
        continue;
      }
      case Node::Group: {
        Cont c{&s, i + 1, k};
        for (const Seq &alt : n.alts)
          if (seq(alt, 0, pos, &c, end))
            return true;
        return false;
      }
      case Node::Repeat:
        return repeat(n, s, i + 1, pos, k, end);
      }
    }
    return proceed(k, pos, end);
  }

private:
  bool proceed(const Cont *k, size_t pos, size_t &end) const {
    if (!k) {
      end = pos;
      return true;
    }
    if (!k->rep)
      return seq(*k->seq, k->idx, pos, k->next, end);
    const Node &r = *k->rep;
    bool again = (r.max < 0 || k->count < r.max) && pos != k->start;
    Cont next{k->seq, k->idx, k->next, &r, k->count + 1, pos};
    if (r.greedy && again && seq(r.alts[0], 0, pos, &next, end))
      return true;
    if (k->count >= r.min && seq(*k->seq, k->idx, pos, k->next, end))
      return true;
    return !r.greedy && again && seq(r.alts[0], 0, pos, &next, end);
  }

  bool repeat(const Node &r, const Seq &s, size_t i, size_t pos, const Cont *k, size_t &end) const {
    const Seq &body = r.alts[0];
    if (body.size() == 1 && body[0].kind == Node::Set) {
      // One character per iteration: count how far it can go, then try the
      // rest from the longest (greedy) or the shortest (lazy) run.
      size_t most = 0, limit = r.max < 0 ? SIZE_MAX : size_t(r.max);
      while (most < limit && pos + most < t_.size() && body[0].set.matches(t_[pos + most]))
        ++most;
      if (most < size_t(r.min))
        return false;
      if (r.greedy) {
        for (size_t n = most + 1; n-- > size_t(r.min);)
          if (seq(s, i, pos + n, k, end))
            return true;
      } else {
        for (size_t n = r.min; n <= most; ++n)
          if (seq(s, i, pos + n, k, end))
            return true;
      }
      return false;
    }
    Cont after{&s, i, k, &r, 0, pos};
    // Zero iterations done so far: proceed() decides between another
    // iteration and the rest, as for every later iteration (start differs
    // from pos only after a non-empty one, so mark this one as non-empty).
    after.start = SIZE_MAX;
    return proceed(&after, pos, end);
  }

  const std::vector<char32_t> &t_;
};

} // namespace

Regex::Regex() = default;
Regex::~Regex() = default;
Regex::Regex(Regex &&) noexcept = default;
Regex &Regex::operator=(Regex &&) noexcept = default;

Status Regex::compile(const std::string &pattern, Regex &out) {
  if (!isValidUtf8(pattern))
    return Status::error("regex: the pattern is not valid UTF-8");
  auto root = std::make_unique<Seq>();
  if (Status s = Parser(pattern).parse(*root); !s)
    return s;
  out.root_ = std::move(root);
  return Status::ok();
}

Regex Regex::literal(const std::string &lit) {
  Regex r;
  r.root_ = std::make_unique<Seq>();
  for (char32_t c : decodeUtf8(lit)) {
    Node n;
    n.set.items.push_back(ClassItem{c, c});
    r.root_->push_back(std::move(n));
  }
  return r;
}

std::vector<std::pair<size_t, size_t>> Regex::findAll(const std::vector<char32_t> &text) const {
  std::vector<std::pair<size_t, size_t>> found;
  if (!root_)
    return found;
  Matcher m(text);
  for (size_t start = 0; start <= text.size();) {
    size_t end = 0;
    if (m.seq(*root_, 0, start, nullptr, end)) {
      found.emplace_back(start, end);
      start = end > start ? end : start + 1;
    } else {
      ++start;
    }
  }
  return found;
}

std::vector<Regex::Piece> Regex::findMatches(const std::string &text) const {
  std::vector<Piece> pieces;
  if (text.empty()) {
    pieces.push_back({0, 0, false});
    return pieces;
  }
  std::vector<size_t> off;
  std::vector<char32_t> cps = decodeUtf8(text, &off);
  size_t prev = 0;
  for (auto [s, e] : findAll(cps)) {
    size_t bs = off[s], be = off[e];
    if (prev != bs)
      pieces.push_back({prev, bs, false});
    pieces.push_back({bs, be, true});
    prev = be;
  }
  if (prev != text.size())
    pieces.push_back({prev, text.size(), false});
  return pieces;
}

} // namespace text
} // namespace genrt
