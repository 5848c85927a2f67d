// The plan verifier's rules for the op kinds other than attention: their
// attributes, and the shape rules the runtime can decide symbolically
// (broadcasting, views, matmul, fused calls against their bodies, axes).
// The CPU kernels recheck shapes from the data they get; these rules are
// what the CUDA executor relies on, since it sizes copies, GEMMs and
// kernel launches from the declared shapes.
#include "runtime/plan/Epilogue.h"
#include "runtime/plan/NBitsLayout.h"
#include "runtime/plan/OpSignatures.h"
#include "runtime/plan/VerifyOp.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace genrt::verify {

bool sameElements(const Shape &a, const Shape &b) {
  constexpr size_t kMaxTerms = 256;
  auto product = [&](const Shape &s) -> std::optional<Dim> {
    Dim n(1);
    for (const Dim &d : s) {
      std::optional<Dim> m = n.mulChecked(d, kMaxTerms);
      if (!m)
        return std::nullopt;
      n = *m;
    }
    return n;
  };
  std::optional<Dim> na = product(a), nb = product(b);
  return na && nb && *na == *nb;
}

bool shapeIs(const Shape &s, const std::vector<Dim> &want) { return s == want; }

std::optional<int64_t> constantLast(const Shape &s) {
  if (s.empty() || !s.back().isConstant())
    return std::nullopt;
  return s.back().constant();
}

bool intAttrIn(const AttrMap &attrs, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t &out) {
  auto it = attrs.find(name);
  if (it != attrs.end() && !std::holds_alternative<int64_t>(it->second))
    return false;
  out = it == attrs.end() ? dflt : std::get<int64_t>(it->second);
  return out >= lo && out <= hi;
}

namespace {

bool isBroadcast(const std::string &k) {
  static const std::set<std::string> kinds = {"add", "sub", "mul", "div", "pow", "max", "min", "equal", "less",
                                              "less_or_equal", "greater", "greater_or_equal", "and", "or",
                                              "where"};
  return kinds.count(k) != 0;
}

bool isUnary(const std::string &k) {
  static const std::set<std::string> kinds = {"not", "abs", "neg", "exp", "log", "sqrt", "reciprocal", "relu",
                                              "sigmoid", "tanh", "erf", "sin", "cos", "cast", "gelu", "silu",
                                              "dropout", "softmax", "cumsum", "layer_norm", "rms_norm"};
  return kinds.count(k) != 0;
}

// numpy broadcasting, decided on the dims as written: at each position the
// dims other than 1 agree, and the result has that dim (or 1).
std::string broadcastRule(const OpSite &s) {
  size_t rank = 0;
  for (size_t i = 0; i < s.numIn(); ++i)
    rank = std::max(rank, s.in(i).shape.size());
  const Shape &r = s.out(0).shape;
  if (r.size() != rank)
    return "its result has rank " + std::to_string(r.size()) + ", the operands broadcast to rank " +
           std::to_string(rank);
  for (size_t j = 0; j < rank; ++j) {
    std::optional<Dim> d;
    for (size_t i = 0; i < s.numIn(); ++i) {
      const Shape &x = s.in(i).shape;
      if (j + x.size() < rank || x[j + x.size() - rank] == Dim(1))
        continue;
      const Dim &xd = x[j + x.size() - rank];
      if (d && *d != xd)
        return "operands " + shapeStr(s.in(0).shape) + " and " + shapeStr(x) + " do not broadcast";
      d = xd;
    }
    if (r[j] != d.value_or(Dim(1)))
      return "its result " + shapeStr(r) + " is not the operands' broadcast shape";
  }
  return "";
}

std::string axisRule(const OpSite &s, int64_t rank, int64_t &axis, int64_t dflt = -1) {
  if (!intAttrIn(s.op.attrs, "axis", dflt, -rank, rank - 1, axis))
    return "its axis lies outside rank " + std::to_string(rank);
  axis = axis < 0 ? axis + rank : axis;
  return "";
}

std::string unaryRule(const OpSite &s) {
  const Shape &x = s.in(0).shape;
  for (size_t i = 0; i < s.numOut(); ++i)
    if (s.out(i).shape != x)
      return "its result " + shapeStr(s.out(i).shape) + " differs from its operand " + shapeStr(x);
  const std::string &k = s.op.kind;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis;
  if (k == "softmax" || k == "cumsum" || k == "layer_norm" || k == "rms_norm")
    if (std::string bad = axisRule(s, rank, axis, k == "cumsum" ? 0 : -1); !bad.empty())
      return bad;
  if (k == "layer_norm" || k == "rms_norm") {
    double eps = attrFloat(s.op.attrs, "epsilon", 1e-5);
    if (!std::isfinite(eps) || eps < 0)
      return "its epsilon must be a finite number >= 0";
  }
  if (k == "gelu") {
    std::string a = attrStr(s.op.attrs, "approximate", "none");
    if (a != "none" && a != "tanh")
      return "approximate must be \"none\" or \"tanh\"";
  }
  if (k == "cast" && !parseDType(attrStr(s.op.attrs, "to", "")))
    return "'to' names no dtype";
  return "";
}

// A view keeps every element: the CUDA executor copies the result's size
// from the operand's buffer.
std::string viewRule(const OpSite &s) {
  if (!sameElements(s.in(0).shape, s.out(0).shape))
    return "its result " + shapeStr(s.out(0).shape) + " does not have the elements of its operand " +
           shapeStr(s.in(0).shape);
  return "";
}

// matmul(a, b[, bias]) {epilogue, transpose_b} (docs/ir-ops.md).
std::string matmulRule(const OpSite &s) {
  Epilogue e;
  if (!parseEpilogue(attrStr(s.op.attrs, "epilogue", ""), e))
    return "its epilogue is unknown";
  if (e.bias != (s.numIn() == 3))
    return e.bias ? "its epilogue adds a bias it is not given" : "a bias operand without a bias epilogue";
  int64_t tb;
  if (!intAttrIn(s.op.attrs, "transpose_b", 0, 0, 1, tb))
    return "transpose_b must be 0 or 1";
  const Shape &a = s.in(0).shape, &b = s.in(1).shape, &y = s.out(0).shape;
  if (a.empty() || b.empty() || (tb && b.size() != 2))
    return "its operands need rank 1 or more (b rank 2 with transpose_b)";
  if (b.size() == 1 || a.size() == 1)
    return ""; // vector products: the CPU kernel decides; the GPU refuses them
  const Dim &K = b[b.size() - (tb ? 1 : 2)], &N = b[b.size() - (tb ? 2 : 1)];
  if (a.back() != K)
    return "a " + shapeStr(a) + " and b " + shapeStr(b) + " disagree on K";
  if (y.size() != std::max(a.size(), b.size()) || y.back() != N || y[y.size() - 2] != a[a.size() - 2])
    return "its result " + shapeStr(y) + " is not a " + shapeStr(a) + " times b " + shapeStr(b);
  if (e.bias && s.in(2).shape != Shape{N})
    return "its bias is not [N]";
  return "";
}

// matmul_nbits(a, b, scales[, zero_points]) {bits, block_size, n}
// (runtime/plan/NBitsLayout.h): b, scales and zero points are weights whose
// shapes and dtypes are the layout's, a's last dim is K, the result a's
// shape with N for K. The kernels index the weights by these facts alone.
std::string nbitsRule(const OpSite &s) {
  int64_t bits, blockSize, n;
  if (!intAttrIn(s.op.attrs, "bits", -1, 4, 8, bits) || !intAttrIn(s.op.attrs, "block_size", -1, 16, kMaxNBitsBlock, blockSize) ||
      !intAttrIn(s.op.attrs, "n", -1, 1, kMaxNBitsDim, n))
    return "bits, block_size or n is missing or out of range";
  std::optional<int64_t> K = constantLast(s.in(0).shape);
  if (!K)
    return "a " + shapeStr(s.in(0).shape) + " has no constant last dim K";
  NBitsShape ns{bits, blockSize, *K, n};
  if (std::string bad = checkNBitsShape(ns); !bad.empty())
    return bad;
  std::vector<int64_t> shapes[3];
  for (size_t i = 1; i < s.numIn(); ++i) {
    const ValueInfo &w = s.in(i);
    if (w.storage != Storage::Weight)
      return "operand " + std::to_string(i) + " is not a weight";
    auto c = constantShape(w.shape);
    if (!c)
      return "operand " + std::to_string(i) + " has a symbolic shape";
    shapes[i - 1] = *c;
  }
  const bool zp = s.numIn() == 4;
  ZeroPointKind kind;
  if (std::string bad = checkNBitsOperands(ns, s.in(1).dtype, shapes[0], s.in(2).dtype, shapes[1], zp,
                                           zp ? s.in(3).dtype : DType::U8, shapes[2], kind);
      !bad.empty())
    return bad;
  Shape want = s.in(0).shape;
  want.back() = Dim(n);
  if (s.out(0).shape != want)
    return "its result " + shapeStr(s.out(0).shape) + " is not " + shapeStr(want);
  return "";
}

// A fused call passes its operands as the body's arguments and takes its
// results from the body's outputs: the same shapes and domains.
std::string fusedRule(const OpSite &s) {
  const Program &body = s.plan.functions.at(attrStr(s.op.attrs, "body")); // the loader checked it
  auto domain = [](DType t) { return isFloat(t) ? 0 : t == DType::Bool ? 1 : 2; };
  for (int r = 0; r < 2; ++r) {
    const std::vector<int32_t> &params = r ? body.outputs : body.arguments;
    for (size_t i = 0; i < params.size(); ++i) {
      const ValueInfo &mine = r ? s.out(i) : s.in(i), &its = body.values[params[i]];
      if (mine.shape != its.shape || domain(mine.dtype) != domain(its.dtype))
        return std::string(r ? "result " : "operand ") + std::to_string(i) + " " + shapeStr(mine.shape) + " " +
               dtypeName(mine.dtype) + " does not match body '" + body.name + "' (" + shapeStr(its.shape) + " " +
               dtypeName(its.dtype) + ")";
    }
  }
  return "";
}

std::string dimsRule(const OpSite &s) {
  const DimList *dl = attrDims(s.op.attrs, "value");
  if (!dl)
    return "it has no 'value' dims";
  for (const Dim &d : dl->dims)
    if (!d.evaluate(s.max))
      return "its dim " + d.str() + " is not over the program's symbols";
  const Shape &r = s.out(0).shape;
  if (r.size() > 1 || (r.empty() && dl->dims.size() != 1) ||
      (r.size() == 1 && r[0] != Dim(static_cast<int64_t>(dl->dims.size()))))
    return "its result " + shapeStr(r) + " does not hold its " + std::to_string(dl->dims.size()) + " dims";
  return "";
}

std::string constantRule(const OpSite &s) {
  const Tensor *t = attrTensor(s.op.attrs, "value");
  if (!t)
    return "it has no tensor 'value'";
  auto shape = constantShape(s.out(0).shape);
  if (!shape || *shape != t->shape() || isFloat(t->dtype()) != isFloat(s.out(0).dtype) ||
      (t->dtype() == DType::Bool) != (s.out(0).dtype == DType::Bool))
    return "its value does not have its result's shape and type";
  return "";
}

std::string transposeRule(const OpSite &s) {
  const Shape &x = s.in(0).shape;
  std::vector<int64_t> perm = attrInts(s.op.attrs, "perm");
  if (perm.empty())
    for (size_t i = x.size(); i-- > 0;)
      perm.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i))
      return "perm is not a permutation";
  if (perm.size() != x.size())
    return "perm does not have the operand's rank";
  Shape want;
  for (int64_t p : perm)
    want.push_back(x[p]);
  return s.out(0).shape == want ? "" : "its result is not the permuted operand";
}

std::string splitRule(const OpSite &s) {
  const Shape &x = s.in(0).shape;
  int64_t axis;
  if (std::string bad = axisRule(s, static_cast<int64_t>(x.size()), axis, 0); !bad.empty())
    return bad;
  std::vector<int64_t> sizes = attrInts(s.op.attrs, "split");
  if (sizes.size() != s.numOut())
    return "split lists " + std::to_string(sizes.size()) + " sizes for " + std::to_string(s.numOut()) + " results";
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape want = x;
    want[axis] = Dim(sizes[i]);
    if (sizes[i] < 0 || __builtin_add_overflow(total, sizes[i], &total) || s.out(i).shape != want)
      return "result " + std::to_string(i) + " is not its split of the operand";
  }
  if (x[axis] != Dim(total))
    return "the split sizes do not add up to the operand's dim";
  return "";
}

std::string gatherRule(const OpSite &s) {
  const int64_t r = static_cast<int64_t>(s.in(0).shape.size());
  int64_t axis;
  if (std::string bad = axisRule(s, r, axis, 0); !bad.empty())
    return bad;
  Shape want(s.in(0).shape.begin(), s.in(0).shape.begin() + axis);
  want.insert(want.end(), s.in(1).shape.begin(), s.in(1).shape.end());
  want.insert(want.end(), s.in(0).shape.begin() + axis + 1, s.in(0).shape.end());
  return s.out(0).shape == want ? "" : "its result is not data gathered along the axis";
}

std::string concatRule(const OpSite &s) {
  const Shape &r = s.out(0).shape;
  int64_t axis;
  if (std::string bad = axisRule(s, static_cast<int64_t>(r.size()), axis, 0); !bad.empty())
    return bad;
  Dim total;
  for (size_t i = 0; i < s.numIn(); ++i) {
    Shape x = s.in(i).shape;
    if (x.size() != r.size())
      return "operand " + std::to_string(i) + " has another rank";
    std::optional<Dim> sum = total.addChecked(x[axis]);
    if (!sum)
      return "the operands' dims along the axis overflow";
    total = *sum;
    x[axis] = r[axis];
    if (x != r)
      return "operand " + std::to_string(i) + " differs from the result off the axis";
  }
  return total == r[axis] ? "" : "the operands' dims along the axis do not add up to the result's";
}

} // namespace

std::string checkOpRules(const OpSite &s) {
  const std::string &k = s.op.kind;
  const OpSignature *sig = findOpSignature(k);
  switch (sig->cls) {
  case OpClass::CacheAttention: return checkAttentionRules(s);
  case OpClass::View: return viewRule(s);
  case OpClass::Gemm: return matmulRule(s);
  case OpClass::NBitsGemm: return nbitsRule(s);
  case OpClass::Fused: return fusedRule(s);
  case OpClass::HostShape: return dimsRule(s);
  case OpClass::Kernel: break;
  }
  if (isBroadcast(k))
    return broadcastRule(s);
  if (isUnary(k))
    return unaryRule(s);
  if (k == "constant")
    return constantRule(s);
  if (k == "transpose")
    return transposeRule(s);
  if (k == "split")
    return splitRule(s);
  if (k == "gather")
    return gatherRule(s);
  if (k == "concat")
    return concatRule(s);
  // The rest (slice, expand, reshape-like data from tensors, ...) take
  // their shapes from data; the CPU kernels check them as they run, and the
  // GPU runs them only inside fused bodies compiled into the plan.
  return "";
}

} // namespace genrt::verify
