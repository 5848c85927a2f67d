// Shape rules: dispatch, shared helpers (broadcasting, axes, operand checks),
// and the elementwise, reduction and matrix-product ops.
#include "compiler/ir/ShapeRules.h"

#include "runtime/plan/Epilogue.h"
#include "runtime/plan/NBitsLayout.h"

#include <algorithm>
#include <set>

namespace genc {

DimSign dimSign(const Dim &d) {
  int64_t c0 = 0;
  bool anyPos = false, anyNeg = false;
  for (auto &[names, c] : d.terms()) {
    if (names.empty())
      c0 = c;
    else if (c > 0)
      anyPos = true;
    else
      anyNeg = true;
  }
  // With every symbol >= 0, positive coefficients only make d >= c0, negative
  // ones only make d <= c0.
  DimSign s;
  if (!anyNeg) {
    s.geZero = c0 >= 0;
    s.gtZero = c0 > 0;
  }
  if (!anyPos) {
    s.leZero = c0 <= 0;
    s.ltZero = c0 < 0;
  }
  return s;
}

bool isSmallDim(const Dim &d) {
  for (auto &[names, c] : d.terms())
    if (c > (int64_t(1) << 31) || c < -(int64_t(1) << 31) || names.size() > 4)
      return false;
  return true;
}

using Rule = llvm::Error (ShapeRules::*)();

static const std::map<std::string, Rule> &ruleTable() {
  static const std::map<std::string, Rule> table = [] {
    std::map<std::string, Rule> t;
    for (const char *k : {"add", "sub", "mul", "div", "pow", "max", "min"})
      t[k] = &ShapeRules::elementwise;
    for (const char *k : {"equal", "less", "less_or_equal", "greater", "greater_or_equal", "and", "or"})
      t[k] = &ShapeRules::comparison;
    for (const char *k : {"not", "abs", "neg", "exp", "log", "sqrt", "reciprocal", "relu", "sigmoid",
                          "tanh", "erf", "sin", "cos", "identity", "gelu", "silu"})
      t[k] = &ShapeRules::unary;
    t["where"] = &ShapeRules::whereOp;
    t["cast"] = &ShapeRules::castOp;
    t["dropout"] = &ShapeRules::dropout;
    t["reduce_mean"] = &ShapeRules::reduceMean;
    t["softmax"] = &ShapeRules::sameAsInputAlongAxis;
    t["cumsum"] = &ShapeRules::sameAsInputAlongAxis;
    t["layer_norm"] = &ShapeRules::norm;
    t["rms_norm"] = &ShapeRules::norm;
    t["matmul"] = &ShapeRules::matmul;
    t["gemm"] = &ShapeRules::gemm;
    t["matmul_nbits"] = &ShapeRules::matmulNBits;
    t["attention"] = &ShapeRules::attention;
    t["reshape"] = &ShapeRules::reshape;
    t["flatten"] = &ShapeRules::flatten;
    t["squeeze"] = &ShapeRules::squeeze;
    t["unsqueeze"] = &ShapeRules::unsqueeze;
    t["transpose"] = &ShapeRules::transpose;
    t["expand"] = &ShapeRules::expand;
    t["tile"] = &ShapeRules::tile;
    t["concat"] = &ShapeRules::concat;
    t["split"] = &ShapeRules::split;
    t["slice"] = &ShapeRules::slice;
    t["gather"] = &ShapeRules::gather;
    t["gather_elements"] = &ShapeRules::gatherElements;
    t["gather_nd"] = &ShapeRules::gatherNd;
    t["trilu"] = &ShapeRules::trilu;
    t["constant"] = &ShapeRules::constant;
    t["dims"] = &ShapeRules::dims;
    t["shape"] = &ShapeRules::shape;
    t["constant_of_shape"] = &ShapeRules::constantOfShape;
    t["range"] = &ShapeRules::range;
    return t;
  }();
  return table;
}

llvm::Error ShapeRules::inferTypes() {
  auto it = ruleTable().find(op.kind());
  if (it != ruleTable().end())
    return (this->*(it->second))();
  // Ops that later passes introduce (kv_attention, fused, ...) keep the types
  // their pass gave them; only the symbols are brought up to date.
  for (Value *r : op.results())
    if (auto e = setResult(r->resultIndex(), r->dtype(), r->shape()))
      return e;
  return llvm::Error::success();
}

// ---- helpers

llvm::Error ShapeRules::error(const std::string &msg) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", op.kind().c_str(),
                                 msg.c_str());
}

std::string valueStr(const SymbolicValue &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += i ? ", " : "";
    // Constants print themselves (INT64_MIN included); huge polynomials do not.
    out += v[i].isConstant() ? std::to_string(v[i].constant()) : isSmallDim(v[i]) ? v[i].str() : "?";
  }
  return out + "]";
}

std::string ShapeRules::typeStr(size_t i) const {
  return std::string(dtypeName(in(i)->dtype())) + shapeStr(shapeOf(i));
}

std::optional<std::vector<int64_t>> ShapeRules::constantInts(size_t i) const {
  auto v = valueOf(i);
  if (!v)
    return std::nullopt;
  std::vector<int64_t> r;
  for (auto &d : *v) {
    if (!d.isConstant())
      return std::nullopt;
    r.push_back(d.constant());
  }
  return r;
}

std::optional<double> ShapeRules::constantScalar(size_t i) const {
  const Value *v = in(i);
  const Tensor *t = v->isWeight() ? v->data() : nullptr;
  if (const Op *def = v->definingOp())
    if (def->is("constant"))
      t = def->tensorAttr("value");
  if (t && t->valid() && t->numElements() == 1)
    return t->getDouble(0);
  if (auto ints = constantInts(i))
    if (ints->size() == 1)
      return static_cast<double>((*ints)[0]);
  return std::nullopt;
}

llvm::Error ShapeRules::setResult(size_t i, DType dt, Shape s) {
  if (i >= op.numResults())
    return error("expected at least " + std::to_string(i + 1) + " results");
  op.result(i)->setType(Type{dt, si.canonical(s)});
  return llvm::Error::success();
}

llvm::Expected<int64_t> ShapeRules::normAxis(int64_t axis, int64_t rank, const char *what) const {
  if (axis < -rank || axis >= rank)
    return error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

llvm::Expected<std::vector<int64_t>> ShapeRules::normAxes(const std::vector<int64_t> &axes,
                                                          int64_t rank) const {
  std::vector<int64_t> r;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    auto n = normAxis(a, rank, "axis");
    if (!n)
      return n.takeError();
    if (!seen.insert(*n).second)
      return error("axis " + std::to_string(a) + " is repeated");
    r.push_back(*n);
  }
  return r;
}

std::optional<Dim> ShapeRules::broadcastDim(const Dim &a, const Dim &b) const {
  Dim x = si.canonical(a), y = si.canonical(b);
  if (x == y)
    return x;
  if (x.isConstant() && x.constant() == 1)
    return y;
  if (y.isConstant() && y.constant() == 1)
    return x;
  if (x.isConstant() && y.isConstant())
    return std::nullopt;
  // A symbol against a constant c != 1 is either c or 1 at run time; the
  // result is c either way, and nothing is learnt about the symbol.
  if (x.isConstant())
    return x;
  if (y.isConstant())
    return y;
  // Two different symbolic extents, neither the literal 1: the model says
  // they are equal.
  si.unify(x, y);
  return si.canonical(x);
}

llvm::Expected<Shape> ShapeRules::broadcast(const Shape &a, const Shape &b) const {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    Dim da = i + a.size() < r ? Dim(1) : a[i + a.size() - r];
    Dim db = i + b.size() < r ? Dim(1) : b[i + b.size() - r];
    auto d = broadcastDim(da, db);
    if (!d)
      return error("cannot broadcast " + shapeStr(si.canonical(a)) + " with " +
                   shapeStr(si.canonical(b)) + ": dims " + si.canonical(da).str() + " and " +
                   si.canonical(db).str() + " differ");
    out[i] = *d;
  }
  return si.canonical(out);
}

llvm::Expected<Dim> ShapeRules::requireEqual(const Dim &a, const Dim &b,
                                             const std::string &what) const {
  Dim x = si.canonical(a), y = si.canonical(b);
  if (x == y)
    return x;
  if (x.isConstant() && y.isConstant())
    return error(what + ": " + x.str() + " != " + y.str());
  if (x.isConstant() || y.isConstant()) {
    // Binds a made-up symbol to the constant; an argument's symbol stays.
    si.unify(x, y);
    return x.isConstant() ? x : y;
  }
  si.unify(x, y);
  return si.canonical(x);
}

llvm::Error ShapeRules::requireDType(size_t i, DType dt) const {
  if (in(i)->dtype() != dt)
    return error("operand " + std::to_string(i) + " must be " + dtypeName(dt) + ", got " +
                 typeStr(i));
  return llvm::Error::success();
}

llvm::Error ShapeRules::requireSameDType(size_t i, size_t j) const {
  if (in(i)->dtype() != in(j)->dtype())
    return error("operand types differ: " + typeStr(i) + " and " + typeStr(j));
  return llvm::Error::success();
}

llvm::Expected<int64_t> ShapeRules::shapeOperandLength(size_t i) const {
  const Shape s = shapeOf(i);
  if (!isInteger(in(i)->dtype()) || s.size() != 1 || !s[0].isConstant())
    return error("operand " + std::to_string(i) +
                 " must be a 1-D integer tensor of constant length, got " + typeStr(i));
  return s[0].constant();
}

llvm::Expected<Shape> ShapeRules::shapeOperand(size_t i, bool *known) const {
  auto len = shapeOperandLength(i);
  if (!len)
    return len.takeError();
  auto v = valueOf(i);
  if (known)
    *known = v && static_cast<int64_t>(v->size()) == *len;
  if (v && static_cast<int64_t>(v->size()) == *len) {
    for (auto &d : *v)
      if (d.isConstant() && d.constant() < 0)
        return error("negative extent " + std::to_string(d.constant()) + " in the shape operand");
    return *v;
  }
  Shape s;
  for (int64_t k = 0; k < *len; ++k)
    s.push_back(si.freshSymbol());
  return s;
}

// ---- elementwise

llvm::Error ShapeRules::elementwise() {
  Shape s = shapeOf(0);
  for (size_t i = 1; i < op.numOperands(); ++i) {
    if (!op.is("pow"))
      if (auto e = requireSameDType(0, i))
        return e;
    auto b = broadcast(s, shapeOf(i));
    if (!b)
      return b.takeError();
    s = *b;
  }
  return setResult(0, in(0)->dtype(), s);
}

llvm::Error ShapeRules::comparison() {
  if (op.is("and") || op.is("or")) {
    if (auto e = requireDType(0, DType::Bool))
      return e;
    if (auto e = requireDType(1, DType::Bool))
      return e;
  } else if (auto e = requireSameDType(0, 1)) {
    return e;
  }
  auto s = broadcast(shapeOf(0), shapeOf(1));
  if (!s)
    return s.takeError();
  return setResult(0, DType::Bool, *s);
}

llvm::Error ShapeRules::unary() {
  if (op.is("not"))
    if (auto e = requireDType(0, DType::Bool))
      return e;
  return setResult(0, in(0)->dtype(), shapeOf(0));
}

llvm::Error ShapeRules::whereOp() {
  if (auto e = requireDType(0, DType::Bool))
    return e;
  if (auto e = requireSameDType(1, 2))
    return e;
  auto s = broadcast(shapeOf(0), shapeOf(1));
  if (!s)
    return s.takeError();
  auto s2 = broadcast(*s, shapeOf(2));
  if (!s2)
    return s2.takeError();
  return setResult(0, in(1)->dtype(), *s2);
}

llvm::Error ShapeRules::castOp() {
  std::string to = op.strAttr("to");
  auto dt = parseDType(to);
  if (!dt)
    return error(to.empty() ? "needs a 'to' attribute" : "unknown dtype '" + to + "'");
  return setResult(0, *dt, shapeOf(0));
}

llvm::Error ShapeRules::dropout() {
  if (auto e = setResult(0, in(0)->dtype(), shapeOf(0)))
    return e;
  if (op.numResults() > 1)
    return setResult(1, DType::Bool, shapeOf(0));
  return llvm::Error::success();
}

// ---- reductions and normalisations

llvm::Error ShapeRules::reduceMean() {
  Shape x = shapeOf(0);
  int64_t r = rankOf(0);
  std::vector<int64_t> axes = op.intsAttr("axes");
  if (!op.hasAttr("axes") || axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  auto norm = normAxes(axes, r);
  if (!norm)
    return norm.takeError();
  bool keep = op.intAttr("keepdims", 1) != 0;
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    bool reduced = std::find(norm->begin(), norm->end(), i) != norm->end();
    if (!reduced)
      out.push_back(x[i]);
    else if (keep)
      out.push_back(1);
  }
  return setResult(0, in(0)->dtype(), out);
}

llvm::Error ShapeRules::sameAsInputAlongAxis() {
  int64_t dflt = op.is("softmax") ? -1 : 0;
  if (auto a = normAxis(op.intAttr("axis", dflt), rankOf(0), "axis"); !a)
    return a.takeError();
  return setResult(0, in(0)->dtype(), shapeOf(0));
}

llvm::Error ShapeRules::norm() {
  Shape x = shapeOf(0);
  auto a = normAxis(op.intAttr("axis", -1), rankOf(0), "axis");
  if (!a)
    return a.takeError();
  // scale (and bias) broadcast over the normalised dims x[axis:].
  Shape normalised(x.begin() + *a, x.end());
  for (size_t i = 1; i < op.numOperands(); ++i) {
    auto b = broadcast(normalised, shapeOf(i));
    if (!b)
      return b.takeError();
    if (b->size() != normalised.size())
      return error("operand " + std::to_string(i) + " " + typeStr(i) +
                   " has more dims than the normalised " + shapeStr(normalised));
  }
  return setResult(0, in(0)->dtype(), x);
}

// ---- matrix products

llvm::Error ShapeRules::matmul() {
  Shape a = shapeOf(0), b = shapeOf(1);
  if (a.empty() || b.empty())
    return error("operands must have rank >= 1, got " + typeStr(0) + " and " + typeStr(1));
  if (op.intAttr("transpose_b", 0)) { // b stored [N, K] (passes/FuseGemms.cpp)
    if (b.size() != 2)
      return error("transpose_b needs a 2-D b, got " + typeStr(1));
    std::swap(b[0], b[1]);
  }
  if (auto e = requireSameDType(0, 1))
    return e;
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), Dim(1));
  if (vecB)
    b.push_back(Dim(1));
  auto k = requireEqual(a.back(), b[b.size() - 2],
                        "cannot multiply " + typeStr(0) + " by " + typeStr(1) +
                            ": contraction dims differ");
  if (!k)
    return k.takeError();
  auto batch = broadcast(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch)
    return batch.takeError();
  Shape out = *batch;
  if (!vecA)
    out.push_back(a[a.size() - 2]);
  if (!vecB)
    out.push_back(b.back());
  // The epilogue of a linear layer (passes/FuseGemms.cpp): bias[N], activation.
  std::string ep = op.strAttr("epilogue");
  genrt::Epilogue parsed;
  if (!genrt::parseEpilogue(ep, parsed))
    return error("unknown epilogue \"" + ep + "\"");
  bool bias = parsed.bias;
  if (bias != (op.numOperands() == 3))
    return error(bias ? "epilogue \"" + ep + "\" needs a bias operand"
                      : "a third operand (bias) needs epilogue = \"bias...\"");
  if (bias && (rankOf(2) != 1 || shapeOf(2)[0] != out.back() || in(2)->dtype() != in(0)->dtype()))
    return error("bias " + typeStr(2) + " does not match the result width " + out.back().str());
  return setResult(0, in(0)->dtype(), out);
}

// matmul_nbits(a, b, scales[, zero_points]) {bits, block_size, n}: the
// weights' shapes and dtypes are those runtime/plan/NBitsLayout.h gives for
// K = a's last dim; the result is a's shape with N for K.
llvm::Error ShapeRules::matmulNBits() {
  Shape a = shapeOf(0);
  if (a.empty() || !isFloat(in(0)->dtype()) || !a.back().isConstant())
    return error("a must be a float tensor with a constant last dim K, got " + typeStr(0));
  genrt::NBitsShape ns{op.intAttr("bits", -1), op.intAttr("block_size", -1), a.back().constant(), op.intAttr("n", -1)};
  if (std::string bad = genrt::checkNBitsShape(ns); !bad.empty())
    return error(bad);
  std::vector<int64_t> shapes[3];
  for (size_t i = 1; i < op.numOperands(); ++i) {
    auto c = constantShape(shapeOf(i));
    if (!c)
      return error("operand " + std::to_string(i) + " " + typeStr(i) + " has a symbolic shape");
    shapes[i - 1] = *c;
  }
  const bool zp = op.numOperands() == 4;
  genrt::ZeroPointKind kind;
  if (std::string bad = genrt::checkNBitsOperands(ns, in(1)->dtype(), shapes[0], in(2)->dtype(), shapes[1], zp,
                                                  zp ? in(3)->dtype() : DType::U8, shapes[2], kind);
      !bad.empty())
    return error(bad);
  a.back() = Dim(ns.N);
  return setResult(0, in(0)->dtype(), a);
}

llvm::Error ShapeRules::gemm() {
  Shape a = shapeOf(0), b = shapeOf(1);
  if (a.size() != 2 || b.size() != 2)
    return error("operands must have rank 2, got " + typeStr(0) + " and " + typeStr(1));
  if (auto e = requireSameDType(0, 1))
    return e;
  if (op.intAttr("trans_a", 0))
    std::swap(a[0], a[1]);
  if (op.intAttr("trans_b", 0))
    std::swap(b[0], b[1]);
  auto k = requireEqual(a[1], b[0], "cannot multiply " + typeStr(0) + " by " + typeStr(1) +
                                        " (after transposes): contraction dims differ");
  if (!k)
    return k.takeError();
  Shape out{a[0], b[1]};
  if (op.numOperands() > 2) {
    auto c = broadcast(out, shapeOf(2));
    if (!c)
      return c.takeError();
    if (c->size() != 2)
      return error("bias " + typeStr(2) + " does not broadcast to " + shapeStr(out));
    out = *c;
  }
  return setResult(0, in(0)->dtype(), out);
}

// q[b, h, sq, d], k and v [b, kvh, sk, d], key_mask [b, sk] -> [b, h, sq, d].
llvm::Error ShapeRules::attention() {
  for (size_t i = 0; i < 3; ++i)
    if (rankOf(i) != 4)
      return error("q, k and v must have rank 4, got " + typeStr(i));
  Shape q = shapeOf(0), k = shapeOf(1), v = shapeOf(2);
  for (int64_t j = 0; j < 4; ++j)
    if (auto d = requireEqual(k[j], v[j], "k " + typeStr(1) + " and v " + typeStr(2) + " differ");
        !d)
      return d.takeError();
  if (auto d = requireEqual(q[0], k[0], "q " + typeStr(0) + " and k " + typeStr(1) +
                                            " differ in batch");
      !d)
    return d.takeError();
  if (auto d = requireEqual(q[3], k[3], "q " + typeStr(0) + " and k " + typeStr(1) +
                                            " differ in head_dim");
      !d)
    return d.takeError();
  size_t maskOperands = op.numOperands() - (op.intAttr("bias_max_distance", 0) > 0 ? 1 : 0);
  if (maskOperands > 3) {
    Shape m = shapeOf(3);
    if (m.size() != 2)
      return error("key_mask must be [batch, keys], got " + typeStr(3));
    if (auto d = requireEqual(m[0], q[0], "key_mask " + typeStr(3) + " differs in batch"); !d)
      return d.takeError();
    if (auto d = requireEqual(m[1], k[2], "key_mask " + typeStr(3) + " differs in keys"); !d)
      return d.takeError();
  }
  return setResult(0, in(0)->dtype(), shapeOf(0));
}

} // namespace genc
