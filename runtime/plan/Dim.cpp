#include "runtime/plan/Dim.h"

#include <algorithm>
#include <cctype>
#include <cassert>
#include <set>

namespace genrt {

Dim Dim::symbol(const std::string &name) {
  Dim d;
  d.terms_[{name}] = 1;
  return d;
}

void Dim::addTerm(const Monomial &m, int64_t c) {
  if (c == 0)
    return;
  auto it = terms_.find(m);
  if (it == terms_.end()) {
    terms_[m] = c;
    return;
  }
  it->second += c;
  if (it->second == 0)
    terms_.erase(it);
}

bool Dim::isConstant() const {
  return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty());
}

int64_t Dim::constant() const {
  assert(isConstant());
  return terms_.empty() ? 0 : terms_.begin()->second;
}

bool Dim::isSymbol() const {
  return terms_.size() == 1 && terms_.begin()->first.size() == 1 &&
         terms_.begin()->second == 1;
}

const std::string &Dim::symbolName() const {
  assert(isSymbol());
  return terms_.begin()->first.front();
}

Dim Dim::operator+(const Dim &o) const {
  Dim r = *this;
  for (auto &[m, c] : o.terms_)
    r.addTerm(m, c);
  return r;
}

Dim Dim::operator-(const Dim &o) const {
  Dim r = *this;
  for (auto &[m, c] : o.terms_)
    r.addTerm(m, -c);
  return r;
}

Dim Dim::operator*(const Dim &o) const {
  Dim r;
  for (auto &[m1, c1] : terms_)
    for (auto &[m2, c2] : o.terms_) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      r.addTerm(m, c1 * c2);
    }
  return r;
}

std::optional<Dim> Dim::mulChecked(const Dim &o, size_t maxTerms) const {
  Dim r;
  for (auto &[m1, c1] : terms_)
    for (auto &[m2, c2] : o.terms_) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      int64_t c, &into = r.terms_[m];
      if (__builtin_mul_overflow(c1, c2, &c) || __builtin_add_overflow(into, c, &into) ||
          r.terms_.size() > maxTerms)
        return std::nullopt;
      if (into == 0)
        r.terms_.erase(m);
    }
  return r;
}

std::optional<Dim> Dim::addChecked(const Dim &o) const {
  Dim r = *this;
  for (auto &[m, c] : o.terms_) {
    int64_t &into = r.terms_[m];
    if (__builtin_add_overflow(into, c, &into))
      return std::nullopt;
    if (into == 0)
      r.terms_.erase(m);
  }
  return r;
}

std::optional<Dim> Dim::divExact(const Dim &o) const {
  if (o.terms_.size() != 1)
    return *this == o ? std::optional<Dim>(Dim(1)) : std::nullopt;
  const auto &[dm, dc] = *o.terms_.begin();
  if (dc == 0)
    return std::nullopt;
  Dim r;
  for (auto &[m, c] : terms_) {
    if (c % dc)
      return std::nullopt;
    // Remove the divisor's symbols (as a multiset) from m.
    Monomial rest = m;
    for (const auto &s : dm) {
      auto it = std::find(rest.begin(), rest.end(), s);
      if (it == rest.end())
        return std::nullopt;
      rest.erase(it);
    }
    r.addTerm(rest, c / dc);
  }
  return r;
}

std::optional<int64_t> Dim::evaluate(const std::map<std::string, int64_t> &env) const {
  // Checked: a plan's dims and symbols are untrusted, and a wrapped value
  // would pass a size check it should fail.
  int64_t total = 0;
  for (auto &[m, c] : terms_) {
    int64_t v = c;
    for (const auto &s : m) {
      auto it = env.find(s);
      if (it == env.end() || __builtin_mul_overflow(v, it->second, &v))
        return std::nullopt;
    }
    if (__builtin_add_overflow(total, v, &total))
      return std::nullopt;
  }
  return total;
}

std::vector<std::string> Dim::symbols() const {
  std::set<std::string> s;
  for (auto &[m, c] : terms_)
    s.insert(m.begin(), m.end());
  return {s.begin(), s.end()};
}

Dim Dim::substitute(const std::map<std::string, Dim> &sub) const {
  Dim r;
  for (auto &[m, c] : terms_) {
    Dim t(c);
    for (const auto &s : m) {
      auto it = sub.find(s);
      t = t * (it == sub.end() ? Dim::symbol(s) : it->second);
    }
    r = r + t;
  }
  return r;
}

std::string Dim::str() const {
  if (terms_.empty())
    return "0";
  // Higher degree first, then lexicographic; the constant term last.
  std::vector<std::pair<Monomial, int64_t>> ts(terms_.begin(), terms_.end());
  std::stable_sort(ts.begin(), ts.end(), [](const auto &a, const auto &b) {
    if (a.first.size() != b.first.size())
      return a.first.size() > b.first.size();
    return a.first < b.first;
  });
  std::string out;
  for (size_t i = 0; i < ts.size(); ++i) {
    auto [m, c] = ts[i];
    if (i > 0)
      out += c < 0 ? "-" : "+";
    else if (c < 0)
      out += "-";
    // |c| as unsigned: -INT64_MIN would overflow.
    uint64_t a = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    std::string mono;
    for (size_t j = 0; j < m.size(); ++j)
      mono += (j ? "*" : "") + m[j];
    if (m.empty())
      out += std::to_string(a);
    else if (a == 1)
      out += mono;
    else
      out += std::to_string(a) + "*" + mono;
  }
  return out;
}

std::optional<Dim> parseDim(const std::string &text) {
  // sum of terms; term = ['-'] factor ('*' factor)*; factor = integer | identifier.
  // Coefficients are gathered with overflow checks before any Dim arithmetic,
  // and the size of the polynomial is bounded: the text may come from a plan.
  constexpr size_t kMaxTerms = 64, kMaxDegree = 16;
  std::map<std::vector<std::string>, int64_t> terms;
  size_t i = 0, n = text.size();
  bool expectTerm = true;
  int sign = 1;
  while (i < n) {
    if (expectTerm) {
      if (text[i] == '-') {
        sign = -sign;
        ++i;
        continue;
      }
      int64_t coef = sign;
      std::vector<std::string> mono;
      sign = 1;
      while (true) {
        size_t start = i;
        if (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) {
          int64_t f = 0;
          for (; i < n && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
            if (__builtin_mul_overflow(f, 10, &f) || __builtin_add_overflow(f, text[i] - '0', &f))
              return std::nullopt;
          if (__builtin_mul_overflow(coef, f, &coef))
            return std::nullopt;
        } else if (i < n && (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
          while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
            ++i;
          if (mono.size() == kMaxDegree)
            return std::nullopt;
          mono.push_back(text.substr(start, i - start));
        } else {
          return std::nullopt;
        }
        if (i < n && text[i] == '*') {
          ++i;
          continue;
        }
        break;
      }
      std::sort(mono.begin(), mono.end());
      int64_t &c = terms[mono];
      if (terms.size() > kMaxTerms || __builtin_add_overflow(c, coef, &c))
        return std::nullopt;
      expectTerm = false;
    } else {
      if (text[i] == '+') {
        expectTerm = true;
      } else if (text[i] == '-') {
        expectTerm = true;
        sign = -1;
      } else {
        return std::nullopt;
      }
      ++i;
    }
  }
  if (expectTerm)
    return std::nullopt;
  // Distinct monomials with coefficient-1 factors: no arithmetic can overflow here.
  Dim total;
  for (const auto &[mono, c] : terms) {
    Dim term(c);
    for (const std::string &s : mono)
      term = term * Dim::symbol(s);
    total = total + term;
  }
  return total;
}

std::string shapeStr(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

Dim numElements(const Shape &s) {
  Dim n(1);
  for (const auto &d : s)
    n = n * d;
  return n;
}

std::optional<int64_t> evaluateElements(const Shape &s, const std::map<std::string, int64_t> &env) {
  int64_t n = 1;
  for (const Dim &d : s) {
    std::optional<int64_t> v = d.evaluate(env);
    if (!v || *v < 0 || __builtin_mul_overflow(n, *v, &n))
      return std::nullopt;
  }
  return n;
}

std::optional<std::vector<int64_t>> constantShape(const Shape &s) {
  std::vector<int64_t> r;
  for (const auto &d : s) {
    if (!d.isConstant())
      return std::nullopt;
    r.push_back(d.constant());
  }
  return r;
}

} // namespace genrt
