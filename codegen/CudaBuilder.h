// The kernel builder behind emitCuda (codegen/CudaEmitter.h), private to
// codegen: CudaEmitter.cpp holds the walk over a body (values, ops, norm
// stages), CudaKernelLoops.cpp the loops over each output and the kernel's
// signature and legend.
#pragma once
#include "codegen/CudaEmitter.h"
#include "codegen/CudaSyntax.h"
#include "codegen/CudaVectorize.h"
#include "codegen/KernelStorage.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace genc::cuda_detail {

inline int64_t normAxis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

/// The larger of two sizes where both are constant, else an upper bound (the sum).
inline Dim mergeWork(const Dim &a, const Dim &b) {
  if (a == Dim(0) || a == b)
    return b;
  if (b == Dim(0))
    return a;
  if (a.isConstant() && b.isConstant())
    return Dim(std::max(a.constant(), b.constant()));
  return a + b;
}

inline bool isReduction(const Op &op) {
  return op.is("rms_norm") || op.is("layer_norm") || op.is("softmax");
}

using Index = std::vector<std::string>;

struct Ctx {
  std::string *pre = nullptr; // row-level statements (row kernels, vectorized loops)
  std::string *body = nullptr;
  std::string indent;
  int branch = 0;
  Lanes *lanes = nullptr; // a vectorized loop: reads at [..., lanes->j] may be vector loads
};

struct Stage {
  std::string s, a, b; // shared row, stats (rms: inv; layer_norm: mean, inv; softmax: max, sum)
};

class Builder {
public:
  /// `storage`: the dtype each parameter has in memory (codegen/KernelStorage.h);
  /// null: the body's dtypes.
  Builder(const Function &f, const KernelParamDTypes *storage) : f_(f), storage_(storage) {}

  bool build(CudaKernel &k, std::string &why);

private:
  // The body with its block's coordinates as the parameters genc_row0,
  // genc_row_step, genc_tid and genc_nt, each result's loop skipped where
  // its pointer is null.
  std::string blockCoordinates(std::string code) const;
  std::string stepCopy(const CudaKernel &kern, const std::string &sig, const std::string &params,
                       std::string code) const;
  std::string rowsBody(const CudaKernel &kern, const std::string &sig, const std::string &params,
                       std::string code, std::string *stepRows) const;
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
  std::string vectorLoad(const std::string &ptr, const Shape &s, DType st, const Index &idx);
  /// `i + off` as a new index variable, remembered as a shift of i's base.
  std::string shifted(const std::string &i, const Dim &off);
  void rowsLoop(size_t i, std::string &code);
  void elementwiseLoop(size_t i, std::string &code);
  DType paramDType(size_t i, bool output, DType body) const;
  std::string opValue(Op *op, unsigned ri, Value *v, const Index &idx);
  std::string elementwise(Op *op, Value *v, const Index &idx);
  std::string reduction(Op *op, const Index &idx);
  std::string concat(Op *op, Value *v, const Index &idx);

  const Function &f_;
  const KernelParamDTypes *storage_;
  std::map<const Value *, DType> argDType_;
  std::map<const Value *, std::string> argName_;
  std::string globals_;
  std::string preIndent_;
  int n_ = 0;
  std::set<std::string> jdep_;
  std::map<std::string, std::pair<std::string, int64_t>> shift_; // index var -> (base var, constant offset)
  std::map<std::string, std::string> memo_;
  std::map<std::string, Stage> stages_;
  Ctx *c_ = nullptr;
  bool rows_ = false;
  Dim shared_, sharedMax_;
  int maxWidth_ = 4;       // lanes of a vectorized loop (16 bytes of the narrowest float storage)
  int64_t maxThreads_ = 0; // threads a row kernel's loops can use
  Dim work_{0};
  std::vector<std::string> outNames_, notes_; // notes: the legend's vector widths
  std::vector<DType> outDTypes_;
  size_t curOut_ = 0;

  void useThreads(const Dim &n, int width) {
    maxThreads_ = std::max<int64_t>(maxThreads_, n.isConstant() ? (n.constant() + width - 1) / width : 1 << 30);
  }
  /// The legend's line for a loop: its width, or why it stays scalar.
  static std::string widthNote(const Lanes &ln, const std::string &stores, const Dim &n, DType t) {
    if (ln.width == 1)
      return "scalar (" + (isFloat(t) ? "last dim " + n.str() : dtypeName(t) + std::string(" values")) + ")";
    std::string l;
    for (const auto &name : ln.loaded)
      l += (l.empty() ? "" : ", ") + name;
    return "vector width " + std::to_string(ln.width) + (stores.empty() ? "" : " (" + stores + ")") +
           ", vector loads: " + (l.empty() ? std::string("none") : l);
  }
  std::set<std::string> symbols_;
  std::string err_;
};

} // namespace genc::cuda_detail
