// CUDA C++ emission for fused groups (see CudaEmitter.h for the strategy).
//
// The walk emits one statement per value it needs (`const T tN = ...;`),
// memoised by (value, index variables), so a value read twice at one index
// is computed once. In a row kernel, a statement that does not depend on the
// position j inside the row is hoisted to the row level: that is how a norm
// read through a gather or a reshape still finds its row before the block
// reduces it. Vectorized loops (codegen/CudaVectorize.h) use the same
// hoisting: what does not depend on the lane goes before the lane loop.
#include "codegen/CudaEmitter.h"

#include "codegen/AttentionKernels.h"
#include "codegen/GemvKernels.h"
#include "codegen/NBitsKernels.h"
#include "codegen/StepKernel.h"
#include "codegen/TokenKernels.h"
#include "codegen/CudaBuilder.h"
#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/GemvAbi.h"
#include "codegen/LaunchCount.h"

#include <sstream>

namespace genc {

// The C++ expression of elementwise op `op` over its operands' expressions
// `a` (fp32 math for floats, wrapping two's complement for integers); empty
// with `why` where it has none. The fused kernels and the GEMV epilogues
// (codegen/GemvKernels.cpp) both write their elementwise math with it, so
// the two round alike.
std::string elementwiseExpr(const Op &op, const std::vector<std::string> &a, std::string &why) {
  const std::string &k = op.kind();
  Dom d = op.numOperands() ? domOf(op.operand(0)->dtype()) : Dom::F;
  Dom rd = domOf(op.result(0)->dtype());
  auto need = [&](size_t n) {
    if (a.size() < n)
      why = "'" + k + "' with too few operands";
    return a.size() >= n;
  };
  std::string e;
  if (k == "add" || k == "sub" || k == "mul") {
    if (!need(2))
      return "";
    const char *o = k == "add" ? " + " : k == "sub" ? " - " : " * ";
    e = d == Dom::I ? "(long long)((unsigned long long)" + a[0] + o + "(unsigned long long)" + a[1] + ")"
                    : a[0] + o + a[1];
  } else if (k == "div") {
    if (!need(2))
      return "";
    e = d == Dom::I ? "(" + a[1] + " == 0LL ? 0LL : " + a[0] + " / " + a[1] + ")" : a[0] + " / " + a[1];
  } else if (k == "max" || k == "min") {
    if (!need(1))
      return "";
    e = a[0];
    for (size_t i = 1; i < a.size(); ++i)
      e = d == Dom::F ? "genc_" + k + "(" + e + ", " + a[i] + ")"
                      : "(" + e + (k == "max" ? " > " : " < ") + a[i] + " ? " + e + " : " + a[i] + ")";
  } else if (k == "pow") {
    if (!need(2) || d != Dom::F) {
      why = "pow on integers";
      return "";
    }
    e = "powf(" + a[0] + ", (float)" + a[1] + ")";
  } else if (k == "equal" || k == "less" || k == "less_or_equal" || k == "greater" ||
             k == "greater_or_equal") {
    if (!need(2))
      return "";
    const char *o = k == "equal" ? " == " : k == "less" ? " < " : k == "less_or_equal" ? " <= "
                  : k == "greater" ? " > " : " >= ";
    e = a[0] + o + a[1];
  } else if (k == "and" || k == "or") {
    if (!need(2))
      return "";
    e = a[0] + (k == "and" ? " && " : " || ") + a[1];
  } else if (k == "not") {
    e = "!" + a[0];
  } else if (k == "where") {
    if (!need(3))
      return "";
    e = a[0] + " ? " + a[1] + " : " + a[2];
  } else if (k == "abs" || k == "neg") {
    if (d == Dom::F)
      e = k == "abs" ? "fabsf(" + a[0] + ")" : "-" + a[0];
    else
      e = k == "abs" ? "(" + a[0] + " >= 0LL ? " + a[0] + " : (long long)(0ULL - (unsigned long long)" + a[0] + "))"
                     : "(long long)(0ULL - (unsigned long long)" + a[0] + ")";
  } else if (k == "cast") {
    std::string to = op.strAttr("to", "f32");
    auto t = parseDType(to);
    if (!t) {
      why = "cast to unknown dtype '" + to + "'";
      return "";
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
      std::string ap = op.strAttr("approximate", "none");
      if (ap == "tanh")
        e = "0.5f * " + x + " * (1.f + tanhf(0.79788456f * (" + x + " + 0.044715f * " + x + " * " + x + " * " + x + ")))";
      else
        e = "0.5f * " + x + " * (1.f + erff(" + x + " * 0.707106769f))";
    }
  }
  if (e.empty() && why.empty())
    why = "no CUDA emission for '" + k + "'";
  return e;
}

namespace cuda_detail {

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
    DType st = argDType_.at(v);
    std::string vec = vectorLoad(it->second, v->shape(), st, idx);
    std::string ref = vec.empty() ? it->second + "[" + linearize(idx, v->shape()) + "]"
                                  : vec + "[" + c_->lanes->lane + "]";
    r = def(domType(domOf(v->dtype())), loadExpr(st, ref));
  } else if (Op *op = v->definingOp()) {
    r = opValue(op, v->resultIndex(), v, idx);
  } else {
    fail("reads '" + v->name() + "', which is neither an argument nor computed in the body");
    return "0";
  }
  memo_[key.str()] = r;
  return r;
}

// A read of `ptr` (shape `s`, elements of type `st`) at [lead..., j + c] in
// a vectorized loop, where `lead` is the same for every lane and the last dim
// and c (a split or slice offset) are multiples of the width: one vector
// load per thread of exactly the elements the lanes would read (the returned
// array, indexed by lane). Not inside a concat branch: lanes may take
// different branches there. Empty where the read stays scalar.
std::string Builder::vectorLoad(const std::string &ptr, const Shape &s, DType st, const Index &idx) {
  Lanes *ln = c_->lanes;
  if (!ln || ln->width == 1 || c_->branch || idx.empty() || !s.back().isConstant() ||
      s.back().constant() % ln->width)
    return "";
  auto sh = shift_.find(idx.back());
  std::string base = sh == shift_.end() ? idx.back() : sh->second.first;
  int64_t c = sh == shift_.end() ? 0 : sh->second.second;
  if (base != ln->j || c % ln->width)
    return "";
  Index lead(idx.begin(), idx.end() - 1);
  for (const auto &i : lead)
    if (dependsOnJ(i))
      return "";
  std::string l = linearize(lead, Shape(s.begin(), s.end() - 1));
  std::string off = (l == "0LL" ? "" : "(" + l + ") * " + D(s.back()) + " + ") + ln->j0 +
                    (c ? " + " + intLit(c) : "");
  std::string arr = fresh("v");
  jdep_.insert(arr); // declared in the vectorized loop, not at the row level
  *ln->loads += vectorLoadText(*ln, storageType(st), arr, ptr + " + " + off);
  ln->loaded.insert(ptr);
  return arr;
}

std::string Builder::shifted(const std::string &i, const Dim &off) {
  std::string r = def("long long", i + " + " + D(off));
  if (off.isConstant()) {
    auto it = shift_.find(i);
    shift_[r] = it == shift_.end() ? std::make_pair(i, off.constant())
                                   : std::make_pair(it->second.first, it->second.second + off.constant());
  }
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
    globals_ += std::string(d == Dom::F ? "alignas(16) " : "") + "static __device__ const " + domType(d) + " " + name + "[" +
                std::to_string(c.numElements()) + "] = {";
    for (int64_t i = 0; i < c.numElements(); ++i)
      globals_ += (i ? ", " : "") + lit(i);
    globals_ += "};\n";
    std::vector<Dim> shape(c.shape().begin(), c.shape().end());
    std::string vec = d == Dom::F ? vectorLoad(name, shape, DType::F32, idx) : "";
    return def(domType(d), vec.empty() ? name + "[" + linearize(idx, shape) + "]" : vec + "[" + c_->lanes->lane + "]");
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
  if (k == "tile") {
    Index in(idx.size());
    for (size_t i = 0; i < idx.size(); ++i)
      in[i] = x->shape()[i] == Dim(1) ? "0LL" : "(" + idx[i] + " % " + D(x->shape()[i]) + ")";
    return val(x, in);
  }
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
      in[a] = shifted(idx[a], off);
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
        if (step == 1) {
          in[a] = b ? shifted(idx[a], Dim(b)) : idx[a];
          continue;
        }
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
  if (k == "gather_elements") {
    Value *ind = op->operand(1);
    if (domOf(ind->dtype()) != Dom::I) {
      fail("gather_elements with non-integer indices");
      return "0";
    }
    int64_t a = normAxis(op->intAttr("axis", 0), x->rank());
    Index in = idx;
    in[a] = def("long long", "genc_clamp_index(" + val(ind, idx) + ", " + D(x->shape()[a]) + ")");
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
  std::vector<std::string> a;
  for (Value *o : op->operands())
    a.push_back(val(o, broadcastIdx(idx, o->shape())));
  if (!err_.empty())
    return "0";
  std::string why, e = elementwiseExpr(*op, a, why);
  if (e.empty()) {
    fail(why);
    return "0";
  }
  return def(domType(domOf(v->dtype())), e);
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
    const std::string &in = preIndent_;
    // The row goes into shared memory by vectors where its length allows.
    Lanes ln;
    ln.width = vectorWidth(n, maxWidth_);
    ln.j = fresh("j");
    std::string loop, loads;
    if (ln.width > 1) {
      ln.j0 = fresh("j");
      ln.lane = fresh("l");
      ln.loads = &loads;
      ln.indent = in + "  ";
      jdep_.insert(ln.j0);
      jdep_.insert(ln.lane);
    }
    jdep_.insert(ln.j);
    useThreads(n, ln.width);
    Ctx inner{c_->pre, &loop, in + (ln.width > 1 ? "    " : "  "), 0, ln.width > 1 ? &ln : nullptr};
    Ctx *outer = c_;
    c_ = &inner;
    Index xi = lead;
    xi.push_back(ln.j);
    std::string xv = val(x, xi);
    c_ = outer;
    std::string &p = *c_->pre;
    p += in + "// " + k + " of " + x->type().str() + " over the last axis\n";
    p += in + "float *" + st.s + " = genc_smem + " + D(shared_) + ";\n";
    if (ln.width > 1) {
      std::string jvec = fresh("j");
      p += in + "for (long long " + jvec + " = threadIdx.x; " + jvec + " < " + intLit(n.constant() / ln.width) +
           "; " + jvec + " += blockDim.x) {\n";
      p += in + "  const long long " + ln.j0 + " = " + jvec + " * " + intLit(ln.width) + ";\n" + loads;
      p += laneLoopText(ln, in + "  ", loop + in + "    " + st.s + "[" + ln.j + "] = " + xv + ";\n");
      p += in + "}\n";
    } else {
      p += in + "for (long long " + ln.j + " = threadIdx.x; " + ln.j + " < " + N + "; " + ln.j +
           " += blockDim.x) {\n" + loop + in + "  " + st.s + "[" + ln.j + "] = " + xv + ";\n" + in + "}\n";
    }
    notes_.push_back(outNames_[curOut_] + " " + k + " row: " + widthNote(ln, "", n, DType::F32));
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

} // namespace cuda_detail

using cuda_detail::Builder;

CudaModule emitCuda(Module &m, DType activation, const AttentionKernelOptions &attentionOptions) {
  CudaModule cm;
  cm.activation = activation;
  cm.attentionTrace = attentionOptions.trace;
  AttentionKernels attention = emitAttentionKernels(m, activation, attentionOptions);
  cm.attentionCode = std::move(attention.code);
  cm.attentionKernels = std::move(attention.names);
  cm.tokenKernels.assign(std::begin(kTokenKernelNames), std::end(kTokenKernelNames));
  std::map<std::string, std::string> conflicts;
  auto storage = kernelParamDTypes(m, activation, conflicts);
  for (const auto &f : m.functions()) {
    if (!isFusedBody(*f))
      continue;
    CudaKernel k;
    std::string why;
    auto st = storage.find(f->name());
    if (auto c = conflicts.find(f->name()); c != conflicts.end()) {
      cm.skipped.push_back({f->name(), c->second});
    } else if (Builder(*f, st == storage.end() ? nullptr : &st->second).build(k, why)) {
      k.source = std::string(cudaPrelude()) + "\n" + k.code;
      cm.kernels.push_back(std::move(k));
    } else {
      cm.skipped.push_back({f->name(), why});
    }
  }
  GemvKernels gemv = emitGemvKernels(m, activation, cm.kernels); // after the bodies: their prologue entries
  cm.gemvCode = std::move(gemv.code);
  cm.gemvKernels = std::move(gemv.names);
  NBitsKernels nbits = emitNBitsKernels(m, activation, cm.kernels); // matmul_nbits' GEMVs and tiles
  if (cm.gemvCode.empty() && !nbits.code.empty()) // their fused entries take a GencGemvPrologue
    cm.gemvCode = std::string("\n") + genrt::cuda::kGencGemvAbiSource + "\n";
  cm.gemvCode += nbits.code;
  cm.gemvKernels.insert(cm.gemvKernels.end(), nbits.names.begin(), nbits.names.end());
  // After the attention families and the row bodies it calls.
  StepKernel step = emitStepKernel(m, activation, cm.kernels);
  cm.stepCode = std::move(step.code);
  cm.stepKernels = std::move(step.names);
  cm.stepDropped = std::move(step.dropped);
  return cm;
}

// The token-choice, GEMV and attention kernels: their ABI structs,
// templates and entries.
static std::string attentionSource(const CudaModule &cm) {
  std::string out = (cm.tokenKernels.empty() ? std::string() : tokenKernelsSource()) + cm.gemvCode;
  if (cm.attentionKernels.empty())
    return out;
  return out + "\n" + genrt::cuda::kGencAttnAbiSource + "\n" + attentionTraceSource(cm.attentionTrace) + attentionTemplates() +
         attentionDecodeTemplates() + attentionMergeTemplates() + attentionStreamTemplates() +
         attentionPrefillTemplates() + cm.attentionCode + cm.stepCode;
}

std::string cudaModuleSource(const CudaModule &cm) {
  std::string out = cudaPrelude();
  for (const auto &k : cm.kernels)
    out += "\n" + k.code;
  return out + attentionSource(cm);
}

std::string cudaModuleText(const CudaModule &cm) {
  std::string out = cudaPrelude();
  for (const auto &k : cm.kernels)
    out += "\n// ==== kernel " + k.name + " ====\n" + k.code;
  out += attentionSource(cm);
  for (const auto &[name, why] : cm.skipped)
    out += "// ==== no kernel for " + name + ": " + why + " (runs on the CPU executor)\n";
  return out;
}

} // namespace genc
