// What the plan verifier's per-kind rules share (PlanVerifier.h): the op
// under verification and small checks over its values' shapes.
#pragma once
#include "runtime/plan/Program.h"

#include <map>
#include <optional>
#include <string>

namespace genrt::verify {

using Symbols = std::map<std::string, int64_t>;

/// One op under verification and what its rules may consult. Operand and
/// result indexes are in range and the signature (arity, domains) holds.
struct OpSite {
  const Plan &plan;
  const Program &prog;
  const OpInfo &op;
  const Symbols &max; // the maximum symbols in force: the program's, or a body's callers'
  const ValueInfo &in(size_t i) const { return prog.values[op.operands[i]]; }
  const ValueInfo &out(size_t i) const { return prog.values[op.results[i]]; }
  size_t numIn() const { return op.operands.size(); }
  size_t numOut() const { return op.results.size(); }
};

/// The rules of the op's kind: attributes in range, shapes consistent with
/// the kind's shape rule where it can be decided. "" or the reason.
std::string checkOpRules(const OpSite &site);        // VerifyOps.cpp
std::string checkAttentionRules(const OpSite &site); // VerifyAttention.cpp

/// Same number of elements for any binding of the symbols (compared as
/// polynomials, with overflow-checked and size-bounded arithmetic).
bool sameElements(const Shape &a, const Shape &b);
/// Whether `s` is exactly [d0, d1, ...] (constant ints or symbol names).
bool shapeIs(const Shape &s, const std::vector<Dim> &want);
/// Rank-checked last dim of a shape, when it is a constant.
std::optional<int64_t> constantLast(const Shape &s);
/// An attribute of an int kind in [lo, hi]; absent gives `dflt` (which is
/// then checked too). False if it has another kind or lies outside.
bool intAttrIn(const AttrMap &attrs, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t &out);

} // namespace genrt::verify
