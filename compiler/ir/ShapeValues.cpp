// Symbolic values: the elements of small integer tensors (shapes, indices,
// extents) as dims, propagated op by op after the result types are known.
#include "compiler/ir/ShapeRules.h"

#include <algorithm>

namespace genc {

namespace {

using Args = std::vector<Dim>;
using Fn = std::function<std::optional<Dim>(const Args &)>;

std::optional<Dim> boolDim(bool b) { return Dim(b ? 1 : 0); }

// A comparison decided from the sign of a - b, when the coefficients tell.
std::optional<Dim> compare(const std::string &kind, const Dim &a, const Dim &b) {
  if (!isSmallDim(a) || !isSmallDim(b))
    return std::nullopt;
  Dim diff = a - b;
  DimSign s = dimSign(diff);
  bool zero = diff.isConstant() && diff.constant() == 0;
  if (kind == "equal") {
    if (zero)
      return boolDim(true);
    if (s.gtZero || s.ltZero)
      return boolDim(false);
  } else if (kind == "less") {
    if (s.ltZero)
      return boolDim(true);
    if (s.geZero)
      return boolDim(false);
  } else if (kind == "less_or_equal") {
    if (s.leZero)
      return boolDim(true);
    if (s.gtZero)
      return boolDim(false);
  } else if (kind == "greater") {
    if (s.gtZero)
      return boolDim(true);
    if (s.leZero)
      return boolDim(false);
  } else if (kind == "greater_or_equal") {
    if (s.geZero)
      return boolDim(true);
    if (s.ltZero)
      return boolDim(false);
  }
  return std::nullopt;
}

std::optional<Dim> arith(const std::string &kind, const Dim &a, const Dim &b) {
  if (!isSmallDim(a) || !isSmallDim(b))
    return std::nullopt;
  if (kind == "add")
    return a + b;
  if (kind == "sub")
    return a - b;
  if (kind == "mul")
    return a * b;
  if (kind == "div") {
    if (a.isConstant() && b.isConstant()) {
      if (b.constant() == 0)
        return std::nullopt;
      return Dim(a.constant() / b.constant()); // truncates toward zero, as int div does
    }
    return a.divExact(b);
  }
  if (kind == "max" || kind == "min") {
    DimSign s = dimSign(a - b);
    if (s.geZero)
      return kind == "max" ? a : b;
    if (s.leZero)
      return kind == "max" ? b : a;
  }
  return std::nullopt;
}

std::optional<int64_t> constantOf(const Dim &d) {
  if (!d.isConstant())
    return std::nullopt;
  return d.constant();
}

// Element conversion for cast between tracked dtypes.
std::optional<Dim> castDim(const Dim &d, DType to) {
  if (to == DType::Bool) {
    if (d.isConstant())
      return boolDim(d.constant() != 0);
    DimSign s = dimSign(d);
    if (s.gtZero || s.ltZero)
      return boolDim(true);
    return std::nullopt;
  }
  if (to == DType::I32 && d.isConstant())
    return Dim(static_cast<int64_t>(static_cast<int32_t>(d.constant())));
  return d;
}

} // namespace

std::optional<SymbolicValue> ShapeRules::elementwiseValues(const Fn &f) const {
  const Type &t = op.result(0)->type();
  size_t n = t.rank() == 0 ? 1 : static_cast<size_t>(t.shape[0].constant());
  std::vector<SymbolicValue> vals;
  for (size_t j = 0; j < op.numOperands(); ++j) {
    auto v = valueOf(j);
    if (!v || (v->size() != 1 && v->size() != n))
      return std::nullopt;
    vals.push_back(std::move(*v));
  }
  SymbolicValue out;
  for (size_t i = 0; i < n; ++i) {
    Args args;
    for (auto &v : vals)
      args.push_back(v.size() == 1 ? v[0] : v[i]);
    auto r = f(args);
    if (!r)
      return std::nullopt;
    out.push_back(*r);
  }
  return out;
}

std::optional<SymbolicValue> ShapeRules::resultValue() const {
  const std::string &k = op.kind();
  const Type &rt = op.result(0)->type();
  size_t n = rt.rank() == 0 ? 1 : static_cast<size_t>(rt.shape[0].constant());

  if (k == "constant") {
    if (const Tensor *t = op.tensorAttr("value"))
      return tensorValue(*t);
    return std::nullopt;
  }
  if (k == "dims")
    return si.canonical(std::get<DimList>(*op.attr("value")).dims);
  if (k == "shape") {
    Shape x = shapeOf(0);
    int64_t start = op.intAttr("start", 0), end = op.intAttr("end", rankOf(0));
    int64_t r = rankOf(0);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    if (end <= start)
      return SymbolicValue{};
    return SymbolicValue(x.begin() + start, x.begin() + end);
  }
  // Same elements, another shape (or a broadcast of one element).
  if (k == "identity" || k == "dropout" || k == "unsqueeze" || k == "squeeze" || k == "reshape" ||
      k == "expand" || k == "flatten" || k == "cast") {
    auto v = valueOf(0);
    if (!v || (v->size() != n && v->size() != 1))
      return std::nullopt;
    SymbolicValue out;
    for (size_t i = 0; i < n; ++i) {
      Dim d = v->size() == 1 ? (*v)[0] : (*v)[i];
      if (k == "cast") {
        auto c = castDim(d, rt.dtype);
        if (!c)
          return std::nullopt;
        d = *c;
      }
      out.push_back(d);
    }
    return out;
  }
  if (k == "gather") {
    auto data = valueOf(0);
    auto idx = constantInts(1);
    if (!data || !idx || rankOf(0) != 1)
      return std::nullopt;
    SymbolicValue out;
    int64_t len = static_cast<int64_t>(data->size());
    for (int64_t i : *idx) {
      if (i < -len || i >= len)
        return std::nullopt;
      out.push_back((*data)[i < 0 ? i + len : i]);
    }
    return out;
  }
  if (k == "concat") {
    SymbolicValue out;
    for (size_t j = 0; j < op.numOperands(); ++j) {
      auto v = valueOf(j);
      if (!v || rankOf(j) != 1)
        return std::nullopt;
      out.insert(out.end(), v->begin(), v->end());
    }
    return out;
  }
  if (k == "slice") {
    auto data = valueOf(0);
    if (!data || rankOf(0) != 1)
      return std::nullopt;
    auto p = sliceParams(1);
    if (!p) {
      llvm::consumeError(p.takeError());
      return std::nullopt;
    }
    if (!p->axesKnown || !p->stepsKnown || !p->starts || !p->ends)
      return std::nullopt;
    std::vector<int64_t> picked;
    for (size_t i = 0; i < p->axes.size(); ++i) { // at most one axis: 0
      auto s = constantOf((*p->starts)[i]), e = constantOf((*p->ends)[i]);
      if (!s || !e)
        return std::nullopt;
      picked = sliceIndices(static_cast<int64_t>(data->size()), *s, *e, p->steps[i]);
    }
    if (p->axes.empty())
      return data;
    SymbolicValue out;
    for (int64_t i : picked)
      out.push_back((*data)[i]);
    return out;
  }
  if (k == "add" || k == "sub" || k == "mul" || k == "div" || k == "max" || k == "min") {
    return elementwiseValues([&](const Args &a) -> std::optional<Dim> {
      Dim acc = a[0];
      for (size_t i = 1; i < a.size(); ++i) {
        auto r = arith(k, acc, a[i]);
        if (!r)
          return std::nullopt;
        acc = *r;
      }
      return acc;
    });
  }
  if (k == "neg")
    return elementwiseValues([](const Args &a) -> std::optional<Dim> {
      if (!isSmallDim(a[0]))
        return std::nullopt;
      return Dim(0) - a[0];
    });
  if (k == "equal" || k == "less" || k == "less_or_equal" || k == "greater" ||
      k == "greater_or_equal")
    return elementwiseValues([&](const Args &a) { return compare(k, a[0], a[1]); });
  if (k == "and" || k == "or" || k == "not")
    return elementwiseValues([&](const Args &a) -> std::optional<Dim> {
      std::vector<bool> bits;
      for (auto &d : a) {
        auto c = constantOf(d);
        if (!c)
          return std::nullopt;
        bits.push_back(*c != 0);
      }
      if (k == "not")
        return boolDim(!bits[0]);
      return boolDim(k == "and" ? bits[0] && bits[1] : bits[0] || bits[1]);
    });
  if (k == "where")
    return elementwiseValues([](const Args &a) -> std::optional<Dim> {
      auto c = constantOf(a[0]);
      if (!c)
        return std::nullopt;
      return *c ? a[1] : a[2];
    });
  if (k == "constant_of_shape") {
    const Tensor *t = op.tensorAttr("value");
    Dim fill = t && t->valid() && t->numElements() == 1 ? Dim(t->getInt(0)) : Dim(0);
    return SymbolicValue(n, fill);
  }
  if (k == "range") {
    auto s = valueOf(0), d = valueOf(2);
    if (!s || !d || !(*d)[0].isConstant() || !isSmallDim((*s)[0]) || !isSmallDim((*d)[0]))
      return std::nullopt;
    SymbolicValue out;
    for (size_t i = 0; i < n; ++i)
      out.push_back((*s)[0] + Dim(static_cast<int64_t>(i) * (*d)[0].constant()));
    return out;
  }
  return std::nullopt;
}

void ShapeRules::inferValues() {
  const Type &rt = op.result(0)->type();
  if (!tracksValues(rt))
    return;
  auto v = resultValue();
  size_t n = rt.rank() == 0 ? 1 : static_cast<size_t>(rt.shape[0].constant());
  if (!v || v->size() != n)
    return;
  for (auto &d : *v)
    d = si.canonical(d);
  si.values_[op.result(0)] = std::move(*v);
}

} // namespace genc
