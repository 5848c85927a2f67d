#include "passes/analysis/PositionWise.h"

#include "passes/analysis/Match.h"

#include <algorithm>
#include <map>
#include <set>

namespace genc {
namespace {

// Axis of the dim that contains the token symbol; -1 if none; -2 if several.
int64_t tokenAxis(const Value *v, const std::string &sym) {
  int64_t axis = -1;
  for (size_t i = 0; i < v->shape().size(); ++i) {
    auto syms = v->shape()[i].symbols();
    if (std::find(syms.begin(), syms.end(), sym) != syms.end())
      axis = axis == -1 ? static_cast<int64_t>(i) : -2;
  }
  return axis;
}

// The token dim is k*tokens (no other terms) and every dim before it is 1.
bool tokenMajor(const Value *v, int64_t axis, const std::string &sym) {
  if (axis < 0)
    return axis == -1;
  auto q = v->shape()[axis].divExact(Dim::symbol(sym));
  if (!q || !q->isConstant())
    return false;
  for (int64_t i = 0; i < axis; ++i)
    if (v->shape()[i] != Dim(1))
      return false;
  return true;
}

llvm::Error mixes(const Op &op, const std::string &why) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "op '%s' at \"%s\" %s: the model is not position-wise outside attention, so it cannot "
      "be compiled into a generation plan",
      op.kind().c_str(), op.loc().c_str(), why.c_str());
}

int64_t normAxis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

} // namespace

llvm::Error checkPositionWise(const Function &f, const std::string &sym) {
  static const std::set<std::string> elementwise = {
      "add", "sub", "mul", "div", "pow", "max", "min", "equal", "less", "less_or_equal",
      "greater", "greater_or_equal", "and", "or", "not", "where", "abs", "neg", "exp", "log",
      "sqrt", "reciprocal", "relu", "sigmoid", "tanh", "erf", "sin", "cos", "cast", "identity",
      "gelu", "silu", "expand", "dropout"};
  for (auto &opPtr : f.ops()) {
    const Op &op = *opPtr;
    const std::string &k = op.kind();
    Value *res = op.numResults() ? op.result() : nullptr;
    int64_t ra = res ? tokenAxis(res, sym) : -1;
    if (ra == -2)
      return mixes(op, "has tokens along two axes");
    bool anyTokenOperand = false;
    for (Value *v : op.operands())
      anyTokenOperand |= tokenAxis(v, sym) != -1;
    if (!anyTokenOperand) {
      // Sources of token-shaped data other than the arguments are position
      // tables that derive-plan failed to replace.
      if (ra >= 0 && !(k == "dims" || k == "constant" || k == "shape"))
        return mixes(op, "creates a value over the token axis from positions alone");
      continue;
    }
    if (elementwise.count(k)) {
      // Right-aligned broadcasting: token axes must coincide in the result.
      for (Value *v : op.operands()) {
        int64_t a = tokenAxis(v, sym);
        if (a == -1)
          continue;
        if (a == -2 || res->rank() - v->rank() + a != ra)
          return mixes(op, "combines values whose token axes do not line up");
      }
      continue;
    }
    if (k == "shape" || k == "kv_attention" || k == "cross_attention" || k == "packed_attention")
      continue; // attention is checked by construction (q/k/v at axis 2)
    if (k == "transpose")
      continue;
    if (k == "reshape" || k == "flatten" || k == "squeeze" || k == "unsqueeze") {
      Value *in = op.operand(0);
      if (!tokenMajor(in, tokenAxis(in, sym), sym) || !tokenMajor(res, ra, sym))
        return mixes(op, "reshapes across the token axis");
      continue;
    }
    if (k == "matmul" || k == "gemm" || k == "matmul_nbits") {
      Value *a = op.operand(0), *b = op.operand(1);
      int64_t aa = tokenAxis(a, sym), ba = tokenAxis(b, sym);
      if (aa == a->rank() - 1 || (b->rank() >= 2 && ba == b->rank() - 2) || (ba >= 0 && b->rank() == 1))
        return mixes(op, "contracts over the token axis");
      if (k == "gemm" && (op.intAttr("trans_a", 0) || op.intAttr("trans_b", 0)))
        return mixes(op, "is a transposed gemm over token values");
      continue;
    }
    if (k == "gather") {
      Value *data = op.operand(0);
      int64_t da = tokenAxis(data, sym);
      if (da >= 0 && normAxis(op.intAttr("axis", 0), data->rank()) == da)
        return mixes(op, "gathers along the token axis");
      continue;
    }
    if (k == "softmax" || k == "cumsum") {
      Value *x = op.operand(0);
      if (normAxis(op.intAttr("axis", -1), x->rank()) == tokenAxis(x, sym))
        return mixes(op, "acts along the token axis");
      continue;
    }
    if (k == "layer_norm" || k == "rms_norm") {
      Value *x = op.operand(0);
      int64_t xa = tokenAxis(x, sym);
      if (xa >= normAxis(op.intAttr("axis", -1), x->rank()))
        return mixes(op, "normalises over the token axis");
      for (size_t i = 1; i < op.numOperands(); ++i)
        if (tokenAxis(op.operand(i), sym) != -1)
          return mixes(op, "has a per-token scale");
      continue;
    }
    if (k == "reduce_mean") {
      Value *x = op.operand(0);
      int64_t xa = tokenAxis(x, sym);
      auto axes = op.intsAttr("axes");
      if (axes.empty())
        return mixes(op, "reduces over every axis");
      for (int64_t a : axes)
        if (normAxis(a, x->rank()) == xa)
          return mixes(op, "reduces over the token axis");
      continue;
    }
    if (k == "split" || k == "concat") {
      int64_t axis = op.intAttr("axis", 0);
      for (Value *v : op.operands())
        if (tokenAxis(v, sym) >= 0 && normAxis(axis, v->rank()) == tokenAxis(v, sym))
          return mixes(op, "splits or joins along the token axis");
      continue;
    }
    if (k == "slice") {
      Value *x = op.operand(0);
      int64_t xa = tokenAxis(x, sym);
      Op *axesOp = defOf(op.operand(3), "constant");
      const Tensor *axes = axesOp ? axesOp->tensorAttr("value") : nullptr;
      if (!axes)
        return mixes(op, "slices with axes not known at compile time");
      for (int64_t i = 0; i < axes->numElements(); ++i)
        if (normAxis(axes->getInt(i), x->rank()) == xa)
          return mixes(op, "slices along the token axis");
      continue;
    }
    return mixes(op, "is not known to be position-wise");
  }
  return llvm::Error::success();
}

} // namespace genc
