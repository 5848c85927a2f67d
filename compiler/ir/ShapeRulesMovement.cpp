// Shape rules for data movement: reshape, flatten, (un)squeeze, transpose,
// expand, concat, split, slice, gather, gather_nd, trilu.
#include "compiler/ir/ShapeRules.h"

#include <algorithm>
#include <limits>
#include <set>

namespace genc {

// The element counts of a reshape must agree for every input, so when they
// only agree if symbols are equal, those symbols are equal: a dynamo export's
// attention_mask.view(batch, -1) of an i64[s43, s53] mask, with batch = s72
// from input_ids, needs s43*s53 / s72 to be an extent, which (as polynomials)
// means s72 is s43 or s53. A view that keeps the rank pairs them by position.
bool ShapeRules::unifyViewDims(const Shape &x, const Shape &target,
                               std::optional<size_t> inferred) const {
  if (x.size() != target.size())
    return false;
  bool any = false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (inferred && i == *inferred)
      continue;
    Dim a = si.canonical(x[i]), b = si.canonical(target[i]);
    if (a != b && a.isSymbol() && b.isSymbol())
      any |= si.unify(a, b);
  }
  return any;
}

llvm::Error ShapeRules::reshape() {
  Shape x = shapeOf(0);
  auto len = shapeOperandLength(1);
  if (!len)
    return len.takeError();
  auto target = valueOf(1);
  Shape out;
  if (!target || static_cast<int64_t>(target->size()) != *len) {
    for (int64_t i = 0; i < *len; ++i)
      out.push_back(si.freshSymbol());
    return setResult(0, in(0)->dtype(), out);
  }
  bool allowZero = op.intAttr("allowzero", 0) != 0;
  std::optional<size_t> inferred;
  Dim known(1);
  for (size_t i = 0; i < target->size(); ++i) {
    Dim d = (*target)[i];
    if (d.isConstant()) {
      int64_t c = d.constant();
      if (c == -1) {
        if (inferred)
          return error("more than one -1 in the target shape " + valueStr(*target));
        inferred = i;
        out.push_back(Dim(0)); // filled in below
        continue;
      }
      if (c == 0 && !allowZero) {
        if (i >= x.size())
          return error("target " + valueStr(*target) + " copies dim " + std::to_string(i) +
                       " (a 0) of " + typeStr(0) + ", which has no such dim");
        d = x[i];
      } else if (c < 0) {
        return error("invalid extent " + std::to_string(c) + " in the target shape " +
                     valueStr(*target));
      }
    }
    if (!isSmallDim(d) || !isSmallDim(known))
      return error("target shape " + valueStr(*target) + " is too large");
    out.push_back(d);
    known = known * d;
  }
  Dim total = numElements(x);
  bool counted = inferred ? total.divExact(known).has_value() : total == known;
  if (!counted && unifyViewDims(x, out, inferred)) {
    x = si.canonical(x);
    out = si.canonical(out);
    total = numElements(x);
    known = Dim(1);
    for (size_t i = 0; i < out.size(); ++i)
      if (!inferred || i != *inferred)
        known = known * out[i];
  }
  if (inferred) {
    if (auto q = total.divExact(known))
      out[*inferred] = *q;
    else if (total.isConstant() && known.isConstant())
      return error("cannot reshape " + typeStr(0) + " to " + valueStr(*target) + ": " +
                   total.str() + " elements do not divide by " + known.str());
    else
      out[*inferred] = si.freshSymbol();
  } else if (total.isConstant() && known.isConstant() && total != known) {
    return error("cannot reshape " + typeStr(0) + " (" + total.str() + " elements) to " +
                 shapeStr(out) + " (" + known.str() + " elements)");
  }
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::flatten() {
  Shape x = shapeOf(0);
  int64_t r = rankOf(0), axis = op.intAttr("axis", 1);
  if (axis < -r || axis > r)
    return error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0)
    axis += r;
  Shape lo(x.begin(), x.begin() + axis), hi(x.begin() + axis, x.end());
  return setResult(0, in(0)->dtype(), {numElements(lo), numElements(hi)});
}

llvm::Error ShapeRules::squeeze() {
  Shape x = shapeOf(0);
  std::vector<int64_t> axes = op.intsAttr("axes");
  std::set<int64_t> drop;
  if (!axes.empty()) {
    auto norm = normAxes(axes, rankOf(0));
    if (!norm)
      return norm.takeError();
    for (int64_t a : *norm) {
      // A symbolic extent squeezed is 1 at run time, by the model's word.
      if (x[a].isConstant() && x[a].constant() != 1)
        return error("cannot squeeze axis " + std::to_string(a) + " of " + typeStr(0) +
                     ": its extent is not 1");
      drop.insert(a);
    }
  } else {
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].isConstant() && x[i].constant() == 1)
        drop.insert(static_cast<int64_t>(i));
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i)
    if (!drop.count(static_cast<int64_t>(i)))
      out.push_back(x[i]);
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::unsqueeze() {
  if (!op.hasAttr("axes"))
    return error("needs an 'axes' attribute");
  Shape x = shapeOf(0);
  int64_t outRank = rankOf(0) + static_cast<int64_t>(op.intsAttr("axes").size());
  auto norm = normAxes(op.intsAttr("axes"), outRank);
  if (!norm)
    return norm.takeError();
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i) {
    if (std::find(norm->begin(), norm->end(), i) != norm->end())
      out.push_back(1);
    else
      out.push_back(x[next++]);
  }
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::transpose() {
  Shape x = shapeOf(0);
  int64_t r = rankOf(0);
  std::vector<int64_t> perm = op.intsAttr("perm");
  if (!op.hasAttr("perm"))
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  std::vector<bool> seen(r, false);
  if (static_cast<int64_t>(perm.size()) != r)
    return error("perm has " + std::to_string(perm.size()) + " entries for " + typeStr(0));
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[p])
      return error("perm is not a permutation of 0.." + std::to_string(r - 1));
    seen[p] = true;
    out.push_back(x[p]);
  }
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::expand() {
  Shape x = shapeOf(0);
  bool known = false;
  auto target = shapeOperand(1, &known);
  if (!target)
    return target.takeError();
  if (known) {
    auto s = broadcast(x, *target);
    if (!s)
      return s.takeError();
    return setResult(0, in(0)->dtype(), *s);
  }
  // Unknown target (fresh symbols): keep what the input fixes, and do not
  // unify anything with the made-up extents.
  size_t r = std::max(x.size(), target->size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    Dim dx = i + x.size() < r ? Dim(1) : x[i + x.size() - r];
    Dim dt = i + target->size() < r ? Dim(1) : (*target)[i + target->size() - r];
    out[i] = dx.isConstant() && dx.constant() == 1 ? dt : dx;
  }
  return setResult(0, in(0)->dtype(), out);
}

// x[d...] tiled repeats[d] times along each axis -> [d · r ...].
llvm::Error ShapeRules::tile() {
  Shape x = shapeOf(0);
  auto reps = shapeOperand(1);
  if (!reps)
    return reps.takeError();
  if (reps->size() != x.size())
    return error("repeats has " + std::to_string(reps->size()) + " entries for a rank-" +
                 std::to_string(x.size()) + " input");
  Shape out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = x[i] * (*reps)[i];
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::concat() {
  if (!op.hasAttr("axis"))
    return error("needs an 'axis' attribute");
  int64_t r = rankOf(0);
  if (r == 0)
    return error("cannot concatenate scalars");
  auto a = normAxis(op.intAttr("axis", 0), r, "axis");
  if (!a)
    return a.takeError();
  Shape out = shapeOf(0);
  Dim sum = out[*a];
  for (size_t i = 1; i < op.numOperands(); ++i) {
    if (rankOf(i) != r)
      return error("operand " + std::to_string(i) + " " + typeStr(i) + " has another rank than " +
                   typeStr(0));
    if (auto e = requireSameDType(0, i))
      return e;
    Shape s = shapeOf(i);
    for (int64_t j = 0; j < r; ++j) {
      if (j == *a)
        continue;
      auto d = requireEqual(out[j], s[j],
                            "operand " + std::to_string(i) + " " + typeStr(i) + " differs from " +
                                shapeStr(out) + " in dim " + std::to_string(j));
      if (!d)
        return d.takeError();
      out[j] = *d;
    }
    sum = sum + s[*a];
  }
  out[*a] = sum;
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::split() {
  Shape x = shapeOf(0);
  auto a = normAxis(op.intAttr("axis", 0), rankOf(0), "axis");
  if (!a)
    return a.takeError();
  size_t n = op.numResults();
  Dim extent = x[*a];
  std::vector<Dim> sizes;
  if (op.hasAttr("split")) {
    auto given = op.intsAttr("split");
    if (given.size() != n)
      return error("split has " + std::to_string(given.size()) + " sizes but the op has " +
                   std::to_string(n) + " results");
    int64_t sum = 0;
    for (int64_t s : given) {
      if (s < 0)
        return error("negative split size " + std::to_string(s));
      sum += s;
      sizes.push_back(s);
    }
    if (auto d = requireEqual(extent, sum,
                              "split sizes add up to " + std::to_string(sum) + " but axis " +
                                  std::to_string(*a) + " of " + typeStr(0) + " has another extent");
        !d)
      return d.takeError();
  } else {
    auto part = extent.divExact(Dim(static_cast<int64_t>(n)));
    if (!part && extent.isConstant())
      return error("axis " + std::to_string(*a) + " of " + typeStr(0) + " does not split into " +
                   std::to_string(n) + " equal parts");
    Dim p = part ? *part : si.freshSymbol();
    sizes.assign(n, p);
  }
  for (size_t i = 0; i < n; ++i) {
    Shape s = x;
    s[*a] = sizes[i];
    if (auto e = setResult(i, in(0)->dtype(), s))
      return e;
  }
  return llvm::Error::success();
}

// ---- slice

// A step longer than the extent picks at most one element; clamping it keeps
// the index arithmetic below inside int64.
static int64_t clampStep(int64_t step, int64_t d) {
  int64_t lim = d < std::numeric_limits<int64_t>::max() ? d + 1 : d;
  return std::clamp<int64_t>(step, -lim, lim);
}

// ONNX Slice bounds: negative counts from the end, then clamp to [lo, hi].
static int64_t sliceBound(int64_t v, int64_t d, int64_t lo, int64_t hi) {
  if (v < 0)
    v = v < -d ? lo - 1 : v + d;
  return std::clamp<int64_t>(v, lo, hi);
}

std::vector<int64_t> sliceIndices(int64_t d, int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> r;
  if (d <= 0 || step == 0)
    return r;
  step = clampStep(step, d);
  if (step > 0) {
    for (int64_t i = sliceBound(start, d, 0, d), e = sliceBound(end, d, 0, d); i < e; i += step)
      r.push_back(i);
  } else {
    for (int64_t i = sliceBound(start, d, 0, d - 1), e = sliceBound(end, d, -1, d - 1); i > e;
         i += step)
      r.push_back(i);
  }
  return r;
}

// How many indices sliceIndices() picks, without listing them (d may be huge).
static int64_t sliceCount(int64_t d, int64_t start, int64_t end, int64_t step) {
  if (d <= 0 || step == 0)
    return 0;
  step = clampStep(step, d);
  if (step > 0) {
    int64_t s = sliceBound(start, d, 0, d), e = sliceBound(end, d, 0, d);
    return e > s ? (e - s - 1) / step + 1 : 0;
  }
  int64_t s = sliceBound(start, d, 0, d - 1), e = sliceBound(end, d, -1, d - 1);
  return s > e ? (s - e - 1) / -step + 1 : 0;
}

std::optional<Dim> sliceExtent(const Dim &d, const Dim &start, const Dim &end, int64_t step) {
  if (d.isConstant() && start.isConstant() && end.isConstant())
    return Dim(sliceCount(d.constant(), start.constant(), end.constant(), step));
  // Symbolic: bounds are taken to lie inside [0, d] (a model slicing
  // x[:, :seq] means seq <= d), except the exporters' "to the end" sentinels.
  auto bound = [&](const Dim &b) -> Dim {
    if (!b.isConstant())
      return b;
    int64_t c = b.constant();
    if (step > 0) {
      if (c >= kSliceSentinel)
        return d;
      if (c <= -kSliceSentinel)
        return 0;
    } else {
      if (c >= kSliceSentinel)
        return d - 1;
      if (c <= -kSliceSentinel)
        return -1;
    }
    return c < 0 ? d + c : Dim(c);
  };
  if (step <= -kSliceSentinel || step >= kSliceSentinel)
    return std::nullopt;
  Dim lo = bound(start), hi = bound(end);
  if (!isSmallDim(lo) || !isSmallDim(hi))
    return std::nullopt;
  Dim diff = step > 0 ? hi - lo : lo - hi;
  int64_t k = step > 0 ? step : -step;
  if (diff.isConstant())
    return Dim(diff.constant() <= 0 ? 0 : (diff.constant() + k - 1) / k);
  if (k == 1)
    return diff;
  // ceil(diff / k) is diff / k when every coefficient divides.
  return diff.divExact(Dim(k));
}

llvm::Expected<ShapeRules::SliceParams> ShapeRules::sliceParams(int64_t rank) const {
  SliceParams p;
  auto n = shapeOperandLength(1);
  if (!n)
    return n.takeError();
  for (size_t i = 2; i < op.numOperands(); ++i) {
    auto m = shapeOperandLength(i);
    if (!m)
      return m.takeError();
    if (*m != *n)
      return error("starts has " + std::to_string(*n) + " entries but operand " +
                   std::to_string(i) + " has " + std::to_string(*m));
  }
  if (*n > rank)
    return error(std::to_string(*n) + " slice bounds for " + typeStr(0));
  p.starts = valueOf(1);
  p.ends = valueOf(2);
  if (op.numOperands() > 3) {
    if (auto axes = constantInts(3)) {
      auto norm = normAxes(*axes, rank);
      if (!norm)
        return norm.takeError();
      p.axes = *norm;
      p.axesKnown = true;
    }
  } else {
    for (int64_t i = 0; i < *n; ++i)
      p.axes.push_back(i);
    p.axesKnown = true;
  }
  if (op.numOperands() > 4) {
    if (auto steps = constantInts(4)) {
      p.steps = *steps;
      p.stepsKnown = true;
    }
  } else {
    p.steps.assign(*n, 1);
    p.stepsKnown = true;
  }
  if (p.stepsKnown)
    for (int64_t s : p.steps)
      if (s == 0)
        return error("slice step is 0");
  return p;
}

llvm::Error ShapeRules::slice() {
  Shape x = shapeOf(0);
  auto p = sliceParams(rankOf(0));
  if (!p)
    return p.takeError();
  Shape out = x;
  if (!p->axesKnown) {
    for (auto &d : out)
      d = si.freshSymbol();
    return setResult(0, in(0)->dtype(), out);
  }
  for (size_t i = 0; i < p->axes.size(); ++i) {
    int64_t a = p->axes[i];
    std::optional<Dim> e;
    if (p->stepsKnown && p->starts && p->ends)
      e = sliceExtent(x[a], (*p->starts)[i], (*p->ends)[i], p->steps[i]);
    out[a] = e ? *e : si.freshSymbol();
  }
  return setResult(0, in(0)->dtype(), out);
}

// ---- gathers

llvm::Error ShapeRules::gather() {
  Shape data = shapeOf(0), idx = shapeOf(1);
  if (data.empty())
    return error("cannot gather from a scalar " + typeStr(0));
  if (!isInteger(in(1)->dtype()))
    return error("indices must be integers, got " + typeStr(1));
  auto a = normAxis(op.intAttr("axis", 0), rankOf(0), "axis");
  if (!a)
    return a.takeError();
  if (auto ints = constantInts(1); ints && data[*a].isConstant()) {
    int64_t extent = data[*a].constant();
    for (int64_t i : *ints)
      if (i < -extent || i >= extent)
        return error("index " + std::to_string(i) + " is out of range for axis " +
                     std::to_string(*a) + " of " + typeStr(0));
  }
  Shape out(data.begin(), data.begin() + *a);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + *a + 1, data.end());
  return setResult(0, in(0)->dtype(), out);
}

// data[...] and indices of the same rank -> indices' shape; along `axis` the
// index picks the element, elsewhere the position is the output's.
llvm::Error ShapeRules::gatherElements() {
  if (rankOf(0) == 0 || rankOf(0) != rankOf(1))
    return error("data " + typeStr(0) + " and indices " + typeStr(1) + " must have one rank >= 1");
  if (!isInteger(in(1)->dtype()))
    return error("indices must be integers, got " + typeStr(1));
  auto a = normAxis(op.intAttr("axis", 0), rankOf(0), "axis");
  if (!a)
    return a.takeError();
  return setResult(0, in(0)->dtype(), shapeOf(1));
}

llvm::Error ShapeRules::gatherNd() {
  Shape data = shapeOf(0), idx = shapeOf(1);
  int64_t b = op.intAttr("batch_dims", 0);
  if (data.empty() || idx.empty())
    return error("operands must have rank >= 1, got " + typeStr(0) + " and " + typeStr(1));
  if (!isInteger(in(1)->dtype()))
    return error("indices must be integers, got " + typeStr(1));
  if (!idx.back().isConstant())
    return error("the last dim of the indices " + typeStr(1) + " must be constant");
  int64_t k = idx.back().constant();
  int64_t q = static_cast<int64_t>(idx.size()), r = static_cast<int64_t>(data.size());
  if (b < 0 || b >= q || k < 1 || b + k > r)
    return error("indices " + typeStr(1) + " with batch_dims " + std::to_string(b) +
                 " do not index " + typeStr(0));
  for (int64_t i = 0; i < b; ++i)
    if (auto d = requireEqual(data[i], idx[i], "batch dim " + std::to_string(i) + " differs");
        !d)
      return d.takeError();
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::trilu() {
  if (rankOf(0) < 2)
    return error("needs rank >= 2, got " + typeStr(0));
  if (op.numOperands() > 1 && (rankOf(1) != 0 || !isInteger(in(1)->dtype())))
    return error("k must be an integer scalar, got " + typeStr(1));
  return setResult(0, in(0)->dtype(), shapeOf(0));
}

} // namespace genc
