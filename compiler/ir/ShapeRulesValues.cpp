// Shape rules for ops that make values: constant, dims, shape,
// constant_of_shape, range.
#include "compiler/ir/ShapeRules.h"

#include <algorithm>
#include <cmath>

namespace genc {

llvm::Error ShapeRules::constant() {
  const Tensor *t = op.tensorAttr("value");
  if (!t)
    return error("needs a dense 'value' attribute");
  Shape s;
  for (int64_t d : t->shape())
    s.push_back(d);
  return setResult(0, t->dtype(), s);
}

llvm::Error ShapeRules::dims() {
  const Attribute *a = op.attr("value");
  const DimList *dl = a ? std::get_if<DimList>(a) : nullptr;
  if (!dl)
    return error("needs a 'value = shape<...>' attribute");
  // Rank 0 when the op says so (a scalar extent), else a 1-D list.
  bool scalar = op.result(0)->rank() == 0 && dl->dims.size() == 1;
  return setResult(0, DType::I64,
                   scalar ? Shape{} : Shape{Dim(static_cast<int64_t>(dl->dims.size()))});
}

// ONNX Shape's start/end: negative counts from the end, then clamp to [0, rank].
static std::pair<int64_t, int64_t> shapeRange(const Op &op, int64_t r) {
  int64_t start = op.intAttr("start", 0), end = op.intAttr("end", r);
  if (start < 0)
    start += r;
  if (end < 0)
    end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  return {start, std::max(start, end)};
}

llvm::Error ShapeRules::shape() {
  auto [start, end] = shapeRange(op, rankOf(0));
  return setResult(0, DType::I64, {Dim(end - start)});
}

llvm::Error ShapeRules::constantOfShape() {
  DType dt = DType::F32;
  if (const Tensor *t = op.tensorAttr("value")) {
    if (t->numElements() != 1)
      return error("'value' must hold one element");
    dt = t->dtype();
  }
  auto s = shapeOperand(0);
  if (!s)
    return s.takeError();
  return setResult(0, dt, *s);
}

llvm::Error ShapeRules::range() {
  for (size_t i = 0; i < 3; ++i) {
    if (rankOf(i) != 0)
      return error("start, limit and delta must be scalars, got " + typeStr(i));
    if (i)
      if (auto e = requireSameDType(0, i))
        return e;
  }
  DType dt = in(0)->dtype();
  auto fresh = [&] { return setResult(0, dt, {si.freshSymbol()}); };
  if (isFloat(dt)) {
    auto s = constantScalar(0), l = constantScalar(1), d = constantScalar(2);
    if (!s || !l || !d)
      return fresh();
    if (*d == 0)
      return error("delta is 0");
    double n = std::ceil((*l - *s) / *d);
    if (!(n < 1e15))
      return error("range is too long");
    return setResult(0, dt, {Dim(static_cast<int64_t>(std::max(0.0, n)))});
  }
  auto s = valueOf(0), l = valueOf(1), d = valueOf(2);
  if (!s || !l || !d || !(*d)[0].isConstant())
    return fresh();
  int64_t delta = (*d)[0].constant();
  if (delta == 0)
    return error("delta is 0");
  const Dim &start = (*s)[0], &limit = (*l)[0];
  if (!isSmallDim(start) || !isSmallDim(limit) || delta <= -kSliceSentinel ||
      delta >= kSliceSentinel)
    return fresh();
  Dim diff = delta > 0 ? limit - start : start - limit;
  int64_t k = delta > 0 ? delta : -delta;
  if (diff.isConstant())
    return setResult(0, dt, {Dim(diff.constant() <= 0 ? 0 : (diff.constant() + k - 1) / k)});
  // A symbolic length is taken to be non-negative (range(0, seq) has seq
  // elements); ceil(diff / k) is exact when every coefficient divides.
  if (k == 1)
    return setResult(0, dt, {diff});
  if (auto q = diff.divExact(Dim(k)))
    return setResult(0, dt, {*q});
  return fresh();
}

} // namespace genc
