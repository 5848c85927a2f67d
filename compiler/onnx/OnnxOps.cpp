// The converter table, and converters for arithmetic, comparisons,
// activations, reductions, normalisations and matrix products.
#include "compiler/onnx/ImportContext.h"
#include "compiler/onnx/OnnxTensor.h"

namespace genc {

using Results = llvm::Expected<std::vector<Value *>>;

const ConvertFn *lookupConverter(const std::string &opType) {
  static const ConverterTable table = [] {
    ConverterTable t;
    addMathConverters(t);
    addShapingConverters(t);
    addConstantConverters(t);
    return t;
  }();
  auto it = table.find(opType);
  return it == table.end() ? nullptr : &it->second;
}

/// An op whose inputs map one to one onto IR operands, with no attributes.
ConvertFn directConverter(const char *kind, size_t arity) {
  return [kind, arity](NodeContext &ctx) -> Results {
    if (ctx.numInputs() > arity)
      return ctx.error("expected " + llvm::Twine(arity) + " inputs, got " +
                       llvm::Twine(ctx.numInputs()));
    std::vector<Value *> operands;
    for (size_t i = 0; i < arity; ++i) {
      GENC_ASSIGN_OR_RETURN(Value * v, ctx.input(i));
      operands.push_back(v);
    }
    GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1(kind, operands));
    return std::vector<Value *>{r};
  };
}

/// Max / Min: any number of inputs, at least one.
static ConvertFn variadic(const char *kind) {
  return [kind](NodeContext &ctx) -> Results {
    std::vector<Value *> operands;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      GENC_ASSIGN_OR_RETURN(Value * v, ctx.input(i));
      operands.push_back(v);
    }
    if (operands.empty())
      return ctx.error("needs at least one input");
    GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1(kind, operands));
    return std::vector<Value *>{r};
  };
}

// ONNX lets the exponent have its own type (x ** 2 with an int64 2); the IR
// keeps one dtype per elementwise op, so the exponent is cast to the base's.
static Results convertPow(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * base, ctx.input(0));
  Value *exponent = nullptr;
  // A constant exponent is converted here rather than materialised and cast.
  std::optional<Tensor> c = ctx.constantInput(1);
  if (c && c->dtype() != base->dtype()) {
    GENC_ASSIGN_OR_RETURN(exponent, ctx.constant(c->castTo(base->dtype())));
  } else {
    GENC_ASSIGN_OR_RETURN(exponent, ctx.input(1));
    if (exponent->dtype() != base->dtype()) {
      GENC_ASSIGN_OR_RETURN(exponent, ctx.emit1("cast", {exponent},
                                                {{"to", std::string(dtypeName(base->dtype()))}}));
    }
  }
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("pow", {base, exponent}));
  return std::vector<Value *>{r};
}

static Results convertCast(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  if (!ctx.hasAttr("to"))
    return ctx.error("attribute 'to' is required");
  int64_t to = ctx.intAttr("to", 0);
  auto dtype = dtypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype)
    return ctx.error("cast to unsupported type " + onnxTypeName(static_cast<int32_t>(to)));
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("cast", {x}, {{"to", std::string(dtypeName(*dtype))}}));
  return std::vector<Value *>{r};
}

// Dropout(data [, ratio [, training_mode]]) -> (output [, mask]). Inference
// only: a training_mode known to be true is refused rather than ignored.
static Results convertDropout(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  std::vector<Value *> operands{x};
  if (ctx.hasInput(2)) {
    if (auto mode = ctx.constantInput(2))
      if (mode->numElements() == 1 && mode->getInt(0) != 0)
        return ctx.error("training_mode = true is not supported (inference only)");
    // The IR's operands are positional: a skipped ratio takes ONNX's default.
    if (ctx.hasInput(1)) {
      GENC_ASSIGN_OR_RETURN(Value * ratio, ctx.input(1));
      operands.push_back(ratio);
    } else {
      GENC_ASSIGN_OR_RETURN(Value * ratio, ctx.constant(Tensor::scalarF32(0.5f)));
      operands.push_back(ratio);
    }
    GENC_ASSIGN_OR_RETURN(Value * mode, ctx.input(2));
    operands.push_back(mode);
  } else if (ctx.hasInput(1)) {
    GENC_ASSIGN_OR_RETURN(Value * ratio, ctx.input(1));
    operands.push_back(ratio);
  }
  unsigned numResults = ctx.hasOutput(1) ? 2 : 1;
  GENC_ASSIGN_OR_RETURN(Op * op, ctx.emit("dropout", operands, {}, numResults));
  return op->results();
}

static Results convertSoftmax(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  int64_t axis = ctx.intAttr("axis", ctx.opset() >= 13 ? -1 : 1);
  // Before opset 13 Softmax normalised over all dims from `axis` on together;
  // that is the IR's per-axis softmax only when `axis` is the last dim.
  if (ctx.opset() < 13 && axis != -1) {
    std::optional<int64_t> rank = ctx.inputRank(0);
    if (!rank || axis != *rank - 1)
      return ctx.error("softmax over the dims from axis " + llvm::Twine(axis) +
                       " on together (opset < 13) is only supported on the last axis");
    axis = -1;
  }
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("softmax", {x}, {{"axis", axis}}));
  return std::vector<Value *>{r};
}

static Results convertLayerNorm(NodeContext &ctx) {
  for (size_t i = 1; i < 3; ++i)
    if (ctx.outputUsed(i))
      return ctx.error("only the first output is supported, but output " + llvm::Twine(i) +
                       " (" + quoted(ctx.node().output(static_cast<int>(i))) + ") is used");
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * scale, ctx.input(1));
  GENC_ASSIGN_OR_RETURN(Value * bias, ctx.optionalInput(2));
  std::vector<Value *> operands{x, scale};
  if (bias)
    operands.push_back(bias);
  // stash_type only picks the precision of the statistics; we always use f32.
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("layer_norm", operands,
                                             {{"axis", ctx.intAttr("axis", -1)},
                                              {"epsilon", ctx.floatAttr("epsilon", 1e-5)}}));
  return std::vector<Value *>{r};
}

// ReduceMean: axes moved from an attribute to an input in opset 18; either
// becomes the `axes` attribute. No axes means all, unless noop_with_empty_axes.
static Results convertReduceMean(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  std::vector<int64_t> axes;
  if (ctx.hasInput(1)) {
    GENC_ASSIGN_OR_RETURN(axes, ctx.intsInput(1, "axes"));
  } else {
    axes = ctx.intsAttr("axes");
  }
  if (axes.empty() && ctx.intAttr("noop_with_empty_axes", 0)) {
    GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("identity", {x}));
    return std::vector<Value *>{r};
  }
  std::map<std::string, Attribute> attrs{{"keepdims", ctx.intAttr("keepdims", 1)}};
  if (!axes.empty())
    attrs["axes"] = axes;
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("reduce_mean", {x}, attrs));
  return std::vector<Value *>{r};
}

static Results convertCumSum(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(std::vector<int64_t> axis, ctx.intsInput(1, "axis"));
  if (axis.size() != 1)
    return ctx.error("the axis input must hold one value, it has " + llvm::Twine(axis.size()));
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("cumsum", {x},
                                             {{"axis", axis[0]},
                                              {"exclusive", ctx.intAttr("exclusive", 0)},
                                              {"reverse", ctx.intAttr("reverse", 0)}}));
  return std::vector<Value *>{r};
}

static Results convertGemm(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * a, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * b, ctx.input(1));
  GENC_ASSIGN_OR_RETURN(Value * c, ctx.optionalInput(2));
  std::vector<Value *> operands{a, b};
  if (c)
    operands.push_back(c);
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("gemm", operands,
                                             {{"alpha", ctx.floatAttr("alpha", 1.0)},
                                              {"beta", ctx.floatAttr("beta", 1.0)},
                                              {"trans_a", ctx.intAttr("transA", 0)},
                                              {"trans_b", ctx.intAttr("transB", 0)}}));
  return std::vector<Value *>{r};
}

static Results convertTrilu(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  std::vector<Value *> operands{x};
  if (ctx.hasInput(1)) {
    GENC_ASSIGN_OR_RETURN(Value * k, ctx.indexInput(1));
    operands.push_back(k);
  }
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("trilu", operands, {{"upper", ctx.intAttr("upper", 1)}}));
  return std::vector<Value *>{r};
}

void addMathConverters(ConverterTable &t) {
  static const std::pair<const char *, const char *> binary[] = {
      {"Add", "add"},       {"Sub", "sub"},
      {"Mul", "mul"},       {"Div", "div"},
      {"Equal", "equal"},   {"Less", "less"},
      {"LessOrEqual", "less_or_equal"},
      {"Greater", "greater"},
      {"GreaterOrEqual", "greater_or_equal"},
      {"And", "and"},       {"Or", "or"},
      {"MatMul", "matmul"},
  };
  for (auto [onnxName, kind] : binary)
    t[onnxName] = directConverter(kind, 2);
  static const std::pair<const char *, const char *> unary[] = {
      {"Abs", "abs"},         {"Neg", "neg"},         {"Exp", "exp"},   {"Log", "log"},
      {"Sqrt", "sqrt"},       {"Reciprocal", "reciprocal"},             {"Relu", "relu"},
      {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},       {"Erf", "erf"},   {"Sin", "sin"},
      {"Cos", "cos"},         {"Not", "not"},         {"Identity", "identity"},
  };
  for (auto [onnxName, kind] : unary)
    t[onnxName] = directConverter(kind, 1);
  t["Where"] = directConverter("where", 3);
  t["Max"] = variadic("max");
  t["Min"] = variadic("min");
  t["Pow"] = convertPow;
  t["Cast"] = convertCast;
  t["Dropout"] = convertDropout;
  t["Softmax"] = convertSoftmax;
  t["LayerNormalization"] = convertLayerNorm;
  t["ReduceMean"] = convertReduceMean;
  t["CumSum"] = convertCumSum;
  t["Gemm"] = convertGemm;
  t["Trilu"] = convertTrilu;
}

} // namespace genc
