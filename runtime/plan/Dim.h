// A tensor dimension: an integer polynomial over named symbols.
//
// Symbolic dims appear as `batch`, `seq`, and, after reshapes and
// concatenations, as products and sums such as `batch*seq` or `past+seq`.
// Keeping them as canonical polynomials makes equality structural, so shape
// inference can compare and fold them without a solver.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace genrt {

class Dim {
public:
  Dim() = default;                         // the constant 0
  Dim(int64_t c) { if (c) terms_[{}] = c; } // NOLINT: implicit on purpose
  static Dim symbol(const std::string &name);

  bool isConstant() const;
  /// The value of a constant dim; asserts isConstant().
  int64_t constant() const;
  bool isSymbol() const; // exactly one symbol with coefficient 1
  const std::string &symbolName() const;

  Dim operator+(const Dim &o) const;
  Dim operator-(const Dim &o) const;
  Dim operator*(const Dim &o) const;
  /// The product with overflow-checked coefficients; nullopt on overflow or
  /// beyond `maxTerms` terms (for dims that come from untrusted input).
  std::optional<Dim> mulChecked(const Dim &o, size_t maxTerms) const;
  std::optional<Dim> addChecked(const Dim &o) const;
  /// Exact division; nullopt unless every term divides (by a constant or by
  /// a single monomial).
  std::optional<Dim> divExact(const Dim &o) const;

  bool operator==(const Dim &o) const { return terms_ == o.terms_; }
  bool operator!=(const Dim &o) const { return !(*this == o); }
  bool operator<(const Dim &o) const { return terms_ < o.terms_; }

  /// Value under a binding of symbols; nullopt if a symbol is unbound or the
  /// arithmetic overflows int64.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t> &env) const;
  /// Symbols appearing in this dim.
  std::vector<std::string> symbols() const;
  /// Replaces symbols by dims.
  Dim substitute(const std::map<std::string, Dim> &m) const;

  /// Canonical text: terms by descending degree then name, e.g. `2*seq+1`.
  std::string str() const;
  /// The terms as (sorted symbol names, coefficient); the constant term has no
  /// names. Lets analyses reason about signs and coefficient sizes.
  std::vector<std::pair<std::vector<std::string>, int64_t>> terms() const {
    return {terms_.begin(), terms_.end()};
  }

private:
  using Monomial = std::vector<std::string>; // sorted symbol names, repeats = powers
  std::map<Monomial, int64_t> terms_;
  void addTerm(const Monomial &m, int64_t c);
};

/// Reads the text Dim::str() writes (`2*seq+1`, `batch*seq`, `64`); nullopt if
/// malformed, if a coefficient overflows int64, or beyond 64 terms or degree 16.
std::optional<Dim> parseDim(const std::string &text);

using Shape = std::vector<Dim>;
std::string shapeStr(const Shape &s);
/// Product of all dims.
Dim numElements(const Shape &s);
/// Product of the dims' values under `env`, evaluated dim by dim (no
/// polynomial expansion); nullopt if a symbol is unbound, a dim is negative
/// or the product overflows int64.
std::optional<int64_t> evaluateElements(const Shape &s, const std::map<std::string, int64_t> &env);
/// Converts a shape whose dims are all constant to integers.
std::optional<std::vector<int64_t>> constantShape(const Shape &s);

} // namespace genrt
