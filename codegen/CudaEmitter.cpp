// CUDA C++ emission for fused groups (see CudaEmitter.h for the strategy).
//
// The walk emits one statement per value it needs (`const T tN = ...;`),
// memoised by (value, index variables), so a value read twice at one index
// is computed once. In a row kernel, a statement that does not depend on the
// position j inside the row is hoisted to the row level: that is how a norm
// read through a gather or a reshape still finds its row before the block
// reduces it.
#include "codegen/CudaEmitter.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

namespace genc {
namespace {

const char *kPrelude = R"(// genc prelude: fp32 math; f16/bf16 storage converts on load and store.
static __device__ __forceinline__ float genc_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ unsigned short genc_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float genc_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
static __device__ __forceinline__ unsigned short genc_f2bf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float genc_max(float x, float y) { return (x > y || x != x) ? x : y; }
static __device__ __forceinline__ float genc_min(float x, float y) { return (x < y || x != x) ? x : y; }
static __device__ __forceinline__ long long genc_f2i(float v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18f) return 9223372036854775807LL;
  if (v <= -9.2233720368547758e18f) return -9223372036854775807LL - 1;
  return (long long)truncf(v);
}
static __device__ __forceinline__ long long genc_clamp_index(long long k, long long n) {
  if (k < 0) k += n;
  return k < 0 ? 0 : (k >= n ? n - 1 : k);
}
// Block-wide sum / max; blockDim.x is a multiple of 32. Every thread gets the
// result; the warps' partials are added in warp order (deterministic).
static __device__ __forceinline__ float genc_block_sum(float v, float *red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.f;
  for (int w = 0; w < (int)((blockDim.x + 31) >> 5); ++w) t += red[w];
  return t;
}
static __device__ __forceinline__ float genc_block_max(float v, float *red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = -__int_as_float(0x7f800000);
  for (int w = 0; w < (int)((blockDim.x + 31) >> 5); ++w) t = fmaxf(t, red[w]);
  return t;
}
)";

enum class Dom { F, I, B };

Dom domOf(DType t) {
  if (isFloat(t))
    return Dom::F;
  if (t == DType::Bool)
    return Dom::B;
  return Dom::I;
}

const char *domType(Dom d) { return d == Dom::F ? "float" : d == Dom::I ? "long long" : "bool"; }

/// Element type in memory; empty if unsupported.
std::string storageType(DType t) {
  switch (t) {
  case DType::F32: return "float";
  case DType::F16:
  case DType::BF16: return "unsigned short";
  case DType::F64: return "double";
  case DType::I64: return "long long";
  case DType::I32: return "int";
  case DType::I8: return "signed char";
  case DType::U8:
  case DType::Bool: return "unsigned char";
  default: return "";
  }
}

std::string loadExpr(DType t, const std::string &ref) {
  switch (t) {
  case DType::F16: return "genc_h2f(" + ref + ")";
  case DType::BF16: return "genc_bf2f(" + ref + ")";
  case DType::F64: return "(float)" + ref;
  case DType::Bool: return "(" + ref + " != 0)";
  case DType::F32: return ref;
  default: return "(long long)" + ref;
  }
}

std::string storeExpr(DType t, const std::string &v) {
  switch (t) {
  case DType::F16: return "genc_f2h(" + v + ")";
  case DType::BF16: return "genc_f2bf(" + v + ")";
  case DType::F64: return "(double)" + v;
  case DType::Bool:
  case DType::U8: return "(unsigned char)" + v;
  case DType::I32: return "(int)" + v;
  case DType::I8: return "(signed char)" + v;
  default: return v;
  }
}

std::string floatLit(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(f))
    return "__int_as_float(0x7fffffff)";
  if (std::isinf(f))
    return f > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s + "f";
}

std::string intLit(int64_t v) {
  if (v == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}

bool isIdent(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

int64_t normAxis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

/// The larger of two sizes where both are constant, else an upper bound (the sum).
Dim mergeWork(const Dim &a, const Dim &b) {
  if (a == Dim(0) || a == b)
    return b;
  if (b == Dim(0))
    return a;
  if (a.isConstant() && b.isConstant())
    return Dim(std::max(a.constant(), b.constant()));
  return a + b;
}

bool isReduction(const Op &op) {
  return op.is("rms_norm") || op.is("layer_norm") || op.is("softmax");
}

using Index = std::vector<std::string>;

struct Ctx {
  std::string *pre = nullptr; // row-level statements (row kernels)
  std::string *body = nullptr;
  std::string indent;
  int branch = 0;
};

struct Stage {
  std::string s, a, b; // shared row, stats (rms: inv; layer_norm: mean, inv; softmax: max, sum)
};

class Builder {
public:
  /// `storage`: the dtype each argument has in memory where it differs from
  /// the body's (a weight cast to f16/bf16 by `genc --dtype`).
  Builder(const Function &f, std::map<size_t, DType> storage) : f_(f), storage_(std::move(storage)) {}

  bool build(CudaKernel &k, std::string &why);

private:
  void fail(const std::string &msg) {
    if (err_.empty())
      err_ = msg;
  }

  std::string fresh(const char *p) { return p + std::to_string(n_++); }

  std::string D(const Dim &d) {
    if (d.isConstant())
      return intLit(d.constant());
    for (const std::string &s : d.symbols()) {
      if (!isIdent(s))
        fail("shape symbol '" + s + "' is not a C identifier");
      symbols_.insert(s);
    }
    return "(" + d.str() + ")";
  }

  bool dependsOnJ(const std::string &expr) const {
    for (size_t i = 0; i < expr.size();) {
      if (std::isalpha(static_cast<unsigned char>(expr[i])) || expr[i] == '_') {
        size_t j = i;
        while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_'))
          ++j;
        if (jdep_.count(expr.substr(i, j - i)))
          return true;
        i = j;
      } else {
        ++i;
      }
    }
    return false;
  }

  /// `const type tN = expr;`, hoisted to the row level where it can be.
  std::string def(const char *type, const std::string &expr) {
    std::string v = fresh("t");
    bool j = dependsOnJ(expr);
    std::string text = std::string("const ") + type + " " + v + " = " + expr + ";\n";
    if (c_->pre && !j && c_->branch == 0)
      *c_->pre += preIndent_ + text;
    else
      *c_->body += c_->indent + text;
    if (j)
      jdep_.insert(v);
    return v;
  }

  std::string linearize(const Index &idx, const Shape &shape) {
    std::string e;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == Dim(1))
        continue;
      e = e.empty() ? idx[d] : "(" + e + ") * " + D(shape[d]) + " + " + idx[d];
    }
    if (e.empty())
      return "0LL";
    return isIdent(e) ? e : def("long long", e);
  }

  Index delinearize(const std::string &flat, const Shape &shape) {
    Index idx(shape.size(), "0LL");
    int outer = -1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != Dim(1)) {
        outer = static_cast<int>(d);
        break;
      }
    std::string rem = flat;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (shape[d] == Dim(1))
        continue;
      if (d == outer) {
        idx[d] = rem;
        break;
      }
      idx[d] = def("long long", rem + " % " + D(shape[d]));
      rem = def("long long", rem + " / " + D(shape[d]));
    }
    return idx;
  }

  /// The index of an operand of shape `s` broadcast to an index of rank idx.size().
  static Index broadcastIdx(const Index &idx, const Shape &s) {
    Index r(s.size());
    for (size_t k = 0; k < s.size(); ++k)
      r[k] = s[k] == Dim(1) ? "0LL" : idx[idx.size() - s.size() + k];
    return r;
  }

  /// Reshape-like ops: dims the two shapes share at the end keep their index.
  Index reshapeIdx(const Index &idx, const Shape &out, const Shape &in) {
    size_t k = 0;
    while (k < out.size() && k < in.size() && out[out.size() - 1 - k] == in[in.size() - 1 - k])
      ++k;
    Shape op(out.begin(), out.end() - k), ip(in.begin(), in.end() - k);
    Index lead(idx.begin(), idx.begin() + op.size());
    Index r = delinearize(linearize(lead, op), ip);
    r.insert(r.end(), idx.end() - k, idx.end());
    return r;
  }

  std::vector<int64_t> constInts(Value *v) {
    Op *p = v->definingOp();
    const Tensor *t = p && p->is("constant") ? p->tensorAttr("value") : nullptr;
    if (!t) {
      fail("a slice bound that is not a constant");
      return {};
    }
    Tensor i = t->castTo(DType::I64);
    return std::vector<int64_t>(i.data<int64_t>(), i.data<int64_t>() + i.numElements());
  }

  std::string val(Value *v, const Index &idx);
  std::string opValue(Op *op, unsigned ri, Value *v, const Index &idx);
  std::string elementwise(Op *op, Value *v, const Index &idx);
  std::string reduction(Op *op, const Index &idx);
  std::string concat(Op *op, Value *v, const Index &idx);

  const Function &f_;
  std::map<size_t, DType> storage_;
  std::map<const Value *, DType> argDType_;
  std::map<const Value *, std::string> argName_;
  std::string globals_;
  std::string preIndent_;
  int n_ = 0;
  std::set<std::string> jdep_;
  std::map<std::string, std::string> memo_;
  std::map<std::string, Stage> stages_;
  Ctx *c_ = nullptr;
  bool rows_ = false;
  Dim shared_, sharedMax_;
  std::set<std::string> symbols_;
  std::string err_;
};

std::string Builder::val(Value *v, const Index &idx) {
  if (!err_.empty())
    return "0";
  std::ostringstream key;
  key << static_cast<const void *>(v);
  for (const auto &i : idx)
    key << ',' << i;
  if (auto it = memo_.find(key.str()); it != memo_.end())
    return it->second;
  std::string r;
  if (auto it = argName_.find(v); it != argName_.end()) {
    DType st = argDType_.count(v) ? argDType_[v] : v->dtype();
    r = def(domType(domOf(v->dtype())), loadExpr(st, it->second + "[" + linearize(idx, v->shape()) + "]"));
  } else if (Op *op = v->definingOp()) {
    r = opValue(op, v->resultIndex(), v, idx);
  } else {
    fail("reads '" + v->name() + "', which is neither an argument nor computed in the body");
    return "0";
  }
  memo_[key.str()] = r;
  return r;
}

std::string Builder::opValue(Op *op, unsigned ri, Value *v, const Index &idx) {
  const std::string &k = op->kind();
  Value *x = op->numOperands() ? op->operand(0) : nullptr;
  if (k == "constant") {
    const Tensor *t = op->tensorAttr("value");
    if (!t) {
      fail("a constant without a value");
      return "0";
    }
    Dom d = domOf(v->dtype());
    Tensor c = t->castTo(d == Dom::F ? DType::F32 : d == Dom::I ? DType::I64 : DType::Bool);
    auto lit = [&](int64_t i) {
      if (d == Dom::F)
        return floatLit(c.data<float>()[i]);
      if (d == Dom::I)
        return intLit(c.data<int64_t>()[i]);
      return std::string(c.data<uint8_t>()[i] ? "true" : "false");
    };
    if (c.numElements() == 1)
      return lit(0);
    std::string name = f_.name() + "_c" + std::to_string(n_++);
    globals_ += std::string("static __device__ const ") + domType(d) + " " + name + "[" +
                std::to_string(c.numElements()) + "] = {";
    for (int64_t i = 0; i < c.numElements(); ++i)
      globals_ += (i ? ", " : "") + lit(i);
    globals_ += "};\n";
    std::vector<Dim> shape(c.shape().begin(), c.shape().end());
    return def(domType(d), name + "[" + linearize(idx, shape) + "]");
  }
  if (k == "dims") {
    const auto *dl = op->attr("value") ? std::get_if<DimList>(op->attr("value")) : nullptr;
    if (!dl) {
      fail("a dims op without a shape value");
      return "0";
    }
    if (v->rank() == 0)
      return dl->dims.empty() ? "0LL" : D(dl->dims[0]);
    std::string e = "0LL";
    for (size_t i = dl->dims.size(); i-- > 0;)
      e = "(" + idx[0] + " == " + std::to_string(i) + " ? " + D(dl->dims[i]) + " : " + e + ")";
    return def("long long", e);
  }
  if (k == "reshape" || k == "flatten" || k == "squeeze" || k == "unsqueeze")
    return val(x, reshapeIdx(idx, v->shape(), x->shape()));
  if (k == "identity" || (k == "dropout" && ri == 0))
    return val(x, idx);
  if (k == "dropout")
    return "true";
  if (k == "expand")
    return val(x, broadcastIdx(idx, x->shape()));
  if (k == "transpose") {
    std::vector<int64_t> perm = op->intsAttr("perm");
    if (perm.empty())
      for (int64_t i = x->rank() - 1; i >= 0; --i)
        perm.push_back(i);
    Index in(idx.size());
    for (size_t i = 0; i < perm.size(); ++i)
      in[perm[i]] = idx[i];
    return val(x, in);
  }
  if (k == "split") {
    int64_t a = normAxis(op->intAttr("axis", 0), x->rank());
    Dim off(0);
    for (unsigned i = 0; i < ri; ++i)
      off = off + op->result(i)->shape()[a];
    Index in = idx;
    if (off != Dim(0))
      in[a] = def("long long", idx[a] + " + " + D(off));
    return val(x, in);
  }
  if (k == "slice") {
    std::vector<int64_t> starts = constInts(op->operand(1)), axes = constInts(op->operand(3)),
                         steps = constInts(op->operand(4));
    if (!err_.empty())
      return "0";
    Index in = idx;
    for (size_t i = 0; i < axes.size() && i < starts.size(); ++i) {
      int64_t a = normAxis(axes[i], x->rank());
      int64_t st = starts[i], step = i < steps.size() ? steps[i] : 1;
      Dim dim = x->shape()[a];
      std::string s;
      if (dim.isConstant()) { // clamp on the host, as ONNX does
        int64_t n = dim.constant(), b = st < 0 ? st + n : st;
        b = step > 0 ? std::max<int64_t>(0, std::min(b, n)) : std::max<int64_t>(0, std::min(b, n - 1));
        s = intLit(b);
      } else {
        std::string n = D(dim), b = st < 0 ? "(" + intLit(st) + " + " + n + ")" : intLit(st);
        std::string hi = step > 0 ? n : "(" + n + " - 1LL)";
        s = "(" + b + " < 0LL ? 0LL : (" + b + " > " + hi + " ? " + hi + " : " + b + "))";
      }
      in[a] = def("long long", s + " + " + idx[a] + " * " + intLit(step));
    }
    return val(x, in);
  }
  if (k == "gather") {
    Value *ind = op->operand(1);
    int64_t a = normAxis(op->intAttr("axis", 0), x->rank());
    size_t r = ind->rank();
    Index sub(idx.begin() + a, idx.begin() + a + r);
    std::string i = val(ind, sub);
    if (domOf(ind->dtype()) != Dom::I) {
      fail("gather with non-integer indices");
      return "0";
    }
    Index in(idx.begin(), idx.begin() + a);
    in.push_back(def("long long", "genc_clamp_index(" + i + ", " + D(x->shape()[a]) + ")"));
    in.insert(in.end(), idx.begin() + a + r, idx.end());
    return val(x, in);
  }
  if (k == "concat")
    return concat(op, v, idx);
  if (isReduction(*op))
    return reduction(op, idx);
  return elementwise(op, v, idx);
}

std::string Builder::concat(Op *op, Value *v, const Index &idx) {
  int64_t a = normAxis(op->intAttr("axis", 0), v->rank());
  Dom d = domOf(v->dtype());
  std::string r = fresh("t");
  *c_->body += c_->indent + domType(d) + " " + r + ";\n";
  jdep_.insert(r); // declared in the element loop
  Dim off(0);
  std::string saveIndent = c_->indent;
  for (size_t i = 0; i < op->numOperands(); ++i) {
    Value *x = op->operand(i);
    Dim end = off + x->shape()[a];
    bool last = i + 1 == op->numOperands();
    *c_->body += saveIndent + (i ? "} else " : "") + (last ? "{\n" : "if (" + idx[a] + " < " + D(end) + ") {\n");
    auto memo = memo_;
    ++c_->branch;
    c_->indent = saveIndent + "  ";
    Index in = idx;
    if (off != Dim(0))
      in[a] = def("long long", idx[a] + " - " + D(off));
    std::string xv = val(x, in);
    *c_->body += c_->indent + r + " = " + xv + ";\n";
    --c_->branch;
    c_->indent = saveIndent;
    memo_ = std::move(memo);
    off = end;
  }
  *c_->body += saveIndent + "}\n";
  return r;
}

std::string Builder::elementwise(Op *op, Value *v, const Index &idx) {
  const std::string &k = op->kind();
  std::vector<std::string> a;
  for (Value *o : op->operands())
    a.push_back(val(o, broadcastIdx(idx, o->shape())));
  if (!err_.empty())
    return "0";
  Dom d = op->numOperands() ? domOf(op->operand(0)->dtype()) : Dom::F;
  Dom rd = domOf(v->dtype());
  auto need = [&](size_t n) {
    if (a.size() < n)
      fail("'" + k + "' with too few operands");
    return a.size() >= n;
  };
  std::string e;
  if (k == "add" || k == "sub" || k == "mul") {
    if (!need(2))
      return "0";
    const char *o = k == "add" ? " + " : k == "sub" ? " - " : " * ";
    e = d == Dom::I ? "(long long)((unsigned long long)" + a[0] + o + "(unsigned long long)" + a[1] + ")"
                    : a[0] + o + a[1];
  } else if (k == "div") {
    if (!need(2))
      return "0";
    e = d == Dom::I ? "(" + a[1] + " == 0LL ? 0LL : " + a[0] + " / " + a[1] + ")" : a[0] + " / " + a[1];
  } else if (k == "max" || k == "min") {
    if (!need(1))
      return "0";
    e = a[0];
    for (size_t i = 1; i < a.size(); ++i)
      e = d == Dom::F ? "genc_" + k + "(" + e + ", " + a[i] + ")"
                      : "(" + e + (k == "max" ? " > " : " < ") + a[i] + " ? " + e + " : " + a[i] + ")";
  } else if (k == "pow") {
    if (!need(2) || d != Dom::F) {
      fail("pow on integers");
      return "0";
    }
    e = "powf(" + a[0] + ", (float)" + a[1] + ")";
  } else if (k == "equal" || k == "less" || k == "less_or_equal" || k == "greater" ||
             k == "greater_or_equal") {
    if (!need(2))
      return "0";
    const char *o = k == "equal" ? " == " : k == "less" ? " < " : k == "less_or_equal" ? " <= "
                  : k == "greater" ? " > " : " >= ";
    e = a[0] + o + a[1];
  } else if (k == "and" || k == "or") {
    if (!need(2))
      return "0";
    e = a[0] + (k == "and" ? " && " : " || ") + a[1];
  } else if (k == "not") {
    e = "!" + a[0];
  } else if (k == "where") {
    if (!need(3))
      return "0";
    e = a[0] + " ? " + a[1] + " : " + a[2];
  } else if (k == "abs" || k == "neg") {
    if (d == Dom::F)
      e = k == "abs" ? "fabsf(" + a[0] + ")" : "-" + a[0];
    else
      e = k == "abs" ? "(" + a[0] + " >= 0LL ? " + a[0] + " : (long long)(0ULL - (unsigned long long)" + a[0] + "))"
                     : "(long long)(0ULL - (unsigned long long)" + a[0] + ")";
  } else if (k == "cast") {
    std::string to = op->strAttr("to", "f32");
    auto t = parseDType(to);
    if (!t) {
      fail("cast to unknown dtype '" + to + "'");
      return "0";
    }
    if (rd == Dom::F) {
      e = d == Dom::F ? a[0] : "(float)" + a[0];
      if (*t == DType::F16)
        e = "genc_h2f(genc_f2h(" + e + "))";
      else if (*t == DType::BF16)
        e = "genc_bf2f(genc_f2bf(" + e + "))";
    } else if (rd == Dom::B) {
      e = "(" + a[0] + " != 0)";
    } else {
      e = d == Dom::F ? "genc_f2i(" + a[0] + ")" : "(long long)" + a[0];
      if (*t == DType::I32)
        e = "(long long)(int)(unsigned int)(unsigned long long)" + e;
      else if (*t == DType::I8)
        e = "(long long)(signed char)(unsigned char)(unsigned long long)" + e;
      else if (*t == DType::U8)
        e = "(long long)(unsigned char)(unsigned long long)" + e;
    }
  } else if (d == Dom::F && !a.empty()) {
    const std::string &x = a[0];
    if (k == "exp") e = "expf(" + x + ")";
    else if (k == "log") e = "logf(" + x + ")";
    else if (k == "sqrt") e = "sqrtf(" + x + ")";
    else if (k == "reciprocal") e = "1.f / " + x;
    else if (k == "relu") e = x + " < 0.f ? 0.f : " + x;
    else if (k == "sigmoid") e = "1.f / (1.f + expf(-" + x + "))";
    else if (k == "tanh") e = "tanhf(" + x + ")";
    else if (k == "erf") e = "erff(" + x + ")";
    else if (k == "sin") e = "sinf(" + x + ")";
    else if (k == "cos") e = "cosf(" + x + ")";
    else if (k == "silu") e = x + " / (1.f + expf(-" + x + "))";
    else if (k == "gelu") {
      std::string ap = op->strAttr("approximate", "none");
      if (ap == "tanh")
        e = "0.5f * " + x + " * (1.f + tanhf(0.79788456f * (" + x + " + 0.044715f * " + x + " * " + x + " * " + x + ")))";
      else
        e = "0.5f * " + x + " * (1.f + erff(" + x + " * 0.707106769f))";
    }
  }
  if (e.empty()) {
    fail("no CUDA emission for '" + k + "'");
    return "0";
  }
  return def(domType(rd), e);
}

// A norm or softmax over the last axis, for the row `idx[:-1]`: the block
// writes the row into shared memory, reduces it, and each element reads it.
std::string Builder::reduction(Op *op, const Index &idx) {
  const std::string &k = op->kind();
  Value *x = op->operand(0);
  int64_t rank = x->rank();
  if (!rows_ || rank == 0) {
    fail("'" + k + "' outside a row kernel");
    return "0";
  }
  int64_t axis = normAxis(op->intAttr("axis", -1), rank);
  if (axis != rank - 1) {
    fail("'" + k + "' over more than the last axis");
    return "0";
  }
  Index lead(idx.begin(), idx.end() - 1);
  std::string leadKey;
  for (const auto &i : lead) {
    if (dependsOnJ(i) || c_->branch) {
      fail("'" + k + "' is read at a row that changes within the output row");
      return "0";
    }
    leadKey += "," + i;
  }
  std::ostringstream key;
  key << static_cast<const void *>(op) << leadKey;
  auto it = stages_.find(key.str());
  if (it == stages_.end()) {
    Dim n = x->shape().back();
    std::string N = D(n);
    Stage st{fresh("s"), fresh("t"), fresh("t")};
    std::string jv = fresh("j");
    jdep_.insert(jv);
    std::string loop;
    Ctx inner{c_->pre, &loop, preIndent_ + "  ", 0};
    Ctx *outer = c_;
    c_ = &inner;
    Index xi = lead;
    xi.push_back(jv);
    std::string xv = val(x, xi);
    c_ = outer;
    std::string &p = *c_->pre;
    const std::string &in = preIndent_;
    p += in + "// " + k + " of " + x->type().str() + " over the last axis\n";
    p += in + "float *" + st.s + " = genc_smem + " + D(shared_) + ";\n";
    p += in + "for (long long " + jv + " = threadIdx.x; " + jv + " < " + N + "; " + jv + " += blockDim.x) {\n" +
         loop + in + "  " + st.s + "[" + jv + "] = " + xv + ";\n" + in + "}\n";
    p += in + "__syncthreads();\n";
    shared_ = shared_ + n;
    std::string acc = fresh("t"), jj = fresh("j");
    auto forRow = [&](const std::string &stmt) {
      return in + "for (long long " + jj + " = threadIdx.x; " + jj + " < " + N + "; " + jj + " += blockDim.x) " + stmt + "\n";
    };
    std::string sj = st.s + "[" + jj + "]";
    std::string eps = floatLit(op->floatAttr("epsilon", 1e-5));
    if (k == "rms_norm") {
      p += in + "float " + acc + " = 0.f;\n" + forRow(acc + " += " + sj + " * " + sj + ";");
      p += in + acc + " = genc_block_sum(" + acc + ", genc_red);\n";
      p += in + "const float " + st.a + " = 1.f / sqrtf(" + acc + " / (float)" + N + " + " + eps + ");\n";
    } else if (k == "layer_norm") {
      std::string acc2 = fresh("t");
      p += in + "float " + acc + " = 0.f;\n" + forRow(acc + " += " + sj + ";");
      p += in + "const float " + st.a + " = genc_block_sum(" + acc + ", genc_red) / (float)" + N + ";\n";
      p += in + "float " + acc2 + " = 0.f;\n" + forRow(acc2 + " += (" + sj + " - " + st.a + ") * (" + sj + " - " + st.a + ");");
      p += in + "const float " + st.b + " = 1.f / sqrtf(genc_block_sum(" + acc2 + ", genc_red) / (float)" + N + " + " + eps + ");\n";
    } else { // softmax
      std::string acc2 = fresh("t");
      p += in + "float " + acc + " = -__int_as_float(0x7f800000);\n" + forRow(acc + " = fmaxf(" + acc + ", " + sj + ");");
      p += in + "const float " + st.a + " = genc_block_max(" + acc + ", genc_red);\n";
      p += in + "float " + acc2 + " = 0.f;\n" + forRow(acc2 + " += expf(" + sj + " - " + st.a + ");");
      p += in + "const float " + st.b + " = genc_block_sum(" + acc2 + ", genc_red);\n";
    }
    it = stages_.emplace(key.str(), st).first;
  }
  const Stage &st = it->second;
  std::string xs = st.s + "[" + idx.back() + "]";
  if (k == "softmax")
    return def("float", "(" + st.a + " == -__int_as_float(0x7f800000)) ? __int_as_float(0x7fffffff) : expf(" +
                            xs + " - " + st.a + ") / " + st.b);
  std::string scale = val(op->operand(1), broadcastIdx(idx, op->operand(1)->shape()));
  if (k == "rms_norm")
    return def("float", xs + " * " + st.a + " * " + scale);
  std::string bias = op->numOperands() > 2
                         ? val(op->operand(2), broadcastIdx(idx, op->operand(2)->shape()))
                         : std::string("0.f");
  return def("float", "(" + xs + " - " + st.a + ") * " + st.b + " * " + scale + " + " + bias);
}

bool Builder::build(CudaKernel &kern, std::string &why) {
  kern.name = f_.name();
  if (!isIdent(kern.name)) {
    why = "the body's name is not a C identifier";
    return false;
  }
  for (auto &op : f_.ops())
    rows_ |= isReduction(*op);
  std::string params, legend, code;
  std::set<std::string> used;
  for (size_t i = 0; i < f_.arguments().size(); ++i) {
    Value *a = f_.arguments()[i].get();
    std::string n = isIdent(a->name()) && !used.count(a->name()) ? a->name() : "in" + std::to_string(i);
    used.insert(n);
    DType dt = a->dtype();
    if (auto it = storage_.find(i); it != storage_.end() && domOf(it->second) == domOf(dt))
      dt = it->second;
    std::string st = storageType(dt);
    if (st.empty()) {
      why = "argument " + n + " has dtype " + dtypeName(dt);
      return false;
    }
    argName_[a] = n;
    argDType_[a] = dt;
    kern.inputs.push_back({n, dt, a->shape()});
    params += ",\n    const " + st + " *__restrict__ " + n;
    for (const Dim &d : a->shape())
      D(d);
  }
  std::vector<std::string> outNames;
  for (size_t i = 0; i < f_.outputs().size(); ++i) {
    const auto &o = f_.outputs()[i];
    std::string n = isIdent(o.name) && !used.count(o.name) ? o.name : "out" + std::to_string(i);
    used.insert(n);
    std::string st = storageType(o.value->dtype());
    if (st.empty()) {
      why = "result " + n + " has dtype " + dtypeName(o.value->dtype());
      return false;
    }
    outNames.push_back(n);
    kern.outputs.push_back({n, o.value->dtype(), o.value->shape()});
    params += ",\n    " + st + " *__restrict__ " + n;
    if (rows_ && o.value->rank() == 0) {
      why = "a scalar result in a row kernel";
      return false;
    }
  }
  // One loop per output.
  Dim work(0);
  int64_t maxRow = 0;
  for (size_t i = 0; i < f_.outputs().size(); ++i) {
    Value *v = f_.outputs()[i].value;
    memo_.clear();
    stages_.clear();
    jdep_.clear();
    shared_ = Dim(0);
    std::string pre, body;
    const Shape &s = v->shape();
    if (rows_) {
      Shape lead(s.begin(), s.end() - 1);
      Dim rows = numElements(lead), n = s.back();
      if (n.isConstant())
        maxRow = std::max(maxRow, n.constant());
      else
        maxRow = 1 << 30;
      work = mergeWork(work, rows);
      preIndent_ = "    ";
      Ctx c{&pre, &body, "      ", 0};
      c_ = &c;
      jdep_.insert("j");
      Index idx = delinearize("row", lead);
      idx.push_back("j");
      std::string r = val(v, idx);
      code += "  { // " + outNames[i] + ": " + v->type().str() + ", one block per row\n";
      code += "    const long long nrows = " + D(rows) + ", n = " + D(n) + ";\n";
      code += "    for (long long row = blockIdx.x; row < nrows; row += gridDim.x) {\n";
      code += pre;
      code += "    for (long long j = threadIdx.x; j < n; j += blockDim.x) {\n" + body;
      code += "      " + outNames[i] + "[row * n + j] = " + storeExpr(v->dtype(), r) + ";\n";
      code += "    }\n    __syncthreads();\n    }\n  }\n";
      sharedMax_ = mergeWork(sharedMax_, shared_);
    } else {
      Dim total = numElements(s);
      work = mergeWork(work, total);
      Ctx c{nullptr, &body, "      ", 0};
      c_ = &c;
      jdep_.insert("i");
      Index idx = delinearize("i", s);
      std::string r = val(v, idx);
      code += "  { // " + outNames[i] + ": " + v->type().str() + "\n";
      code += "    const long long n = " + D(total) + ";\n";
      code += "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; "
              "i += (long long)gridDim.x * blockDim.x) {\n" + body;
      code += "      " + outNames[i] + "[i] = " + storeExpr(v->dtype(), r) + ";\n    }\n  }\n";
    }
    if (!err_.empty()) {
      why = err_;
      return false;
    }
  }
  kern.symbols.assign(symbols_.begin(), symbols_.end());
  kern.mode = rows_ ? "rows" : "elementwise";
  kern.work = work;
  kern.sharedFloats = rows_ ? sharedMax_ : Dim(0);
  kern.blockSize = rows_ ? static_cast<int>(std::min<int64_t>(256, std::max<int64_t>(32, (maxRow + 31) / 32 * 32))) : 256;

  // The legend (llm.c style): shapes first, then what the body does.
  legend += "// " + kern.name + ": " + (rows_ ? "one block per row (norm/softmax over the last axis)" : "elementwise, grid-stride") + "\n";
  for (const auto &p : kern.inputs)
    legend += "//   " + p.name + std::string(p.name.size() < 6 ? 6 - p.name.size() : 1, ' ') + Type{p.dtype, p.shape}.str() + "\n";
  for (const auto &p : kern.outputs)
    legend += "//   " + p.name + std::string(p.name.size() < 6 ? 6 - p.name.size() : 1, ' ') + Type{p.dtype, p.shape}.str() + "  (result)\n";
  std::string ops;
  for (auto &op : f_.ops())
    if (!op->is("constant") && !op->is("dims"))
      ops += (ops.empty() ? "" : ", ") + op->kind();
  legend += "//   ops: " + ops + "\n";
  std::string syms;
  for (const auto &s : kern.symbols)
    syms += (syms.empty() ? "" : ", ") + s;
  legend += "//   symbols: " + (syms.empty() ? std::string("none") : syms) + "; launch: " + kern.mode +
            ", work " + kern.work.str() + ", block " + std::to_string(kern.blockSize) +
            (rows_ ? ", shared " + kern.sharedFloats.str() + " floats" : "") + "\n";
  std::string sig;
  for (const auto &s : kern.symbols)
    sig += (sig.empty() ? "" : ",\n    ") + std::string("const long long ") + s;
  if (sig.empty())
    params = params.substr(6); // drop the leading ",\n    "
  std::string head = "extern \"C\" __global__ void " + kern.name + "(\n    " + sig + params + ") {\n";
  if (rows_)
    head += "  extern __shared__ float genc_smem[];\n  __shared__ float genc_red[32];\n";
  kern.code = legend + globals_ + head + code + "}\n";
  return true;
}

} // namespace

CudaModule emitCuda(const Module &m) {
  // Weights a fused op reads keep their storage dtype (f16/bf16 after
  // `--dtype`); the body's argument says f32, the kernel converts on load.
  std::map<std::string, std::map<size_t, DType>> storage;
  for (const auto &f : m.functions())
    for (const auto &op : f->ops())
      if (op->is("fused"))
        for (size_t i = 0; i < op->numOperands(); ++i)
          if (op->operand(i)->isWeight())
            storage[op->strAttr("body")][i] = op->operand(i)->dtype();
  CudaModule cm;
  for (const auto &f : m.functions()) {
    if (f->name().rfind("fused_", 0) != 0)
      continue;
    CudaKernel k;
    std::string why;
    if (Builder(*f, storage[f->name()]).build(k, why)) {
      k.source = std::string(kPrelude) + "\n" + k.code;
      cm.kernels.push_back(std::move(k));
    } else {
      cm.skipped.push_back({f->name(), why});
    }
  }
  return cm;
}

std::string cudaModuleSource(const CudaModule &cm) {
  std::string out = kPrelude;
  for (const auto &k : cm.kernels)
    out += "\n" + k.code;
  return out;
}

std::string cudaModuleText(const CudaModule &cm) {
  std::string out = kPrelude;
  for (const auto &k : cm.kernels)
    out += "\n// ==== kernel " + k.name + " ====\n" + k.code;
  for (const auto &[name, why] : cm.skipped)
    out += "// ==== no kernel for " + name + ": " + why + " (runs on the CPU executor)\n";
  return out;
}

} // namespace genc
