// Converters for values known from the graph or from shapes: Constant,
// ConstantOfShape, Shape, Range.
#include "compiler/onnx/ImportContext.h"

namespace genc {

using Results = llvm::Expected<std::vector<Value *>>;

/// The tensor of a Constant node, from whichever of its attribute forms it uses.
static std::optional<Tensor> constantValue(NodeContext &ctx) {
  if (ctx.hasAttr("value"))
    return ctx.tensorAttr("value");
  if (ctx.hasAttr("value_float"))
    return Tensor::scalarF32(static_cast<float>(ctx.floatAttr("value_float", 0)));
  if (ctx.hasAttr("value_int"))
    return Tensor::scalarI64(ctx.intAttr("value_int", 0));
  if (ctx.hasAttr("value_floats")) {
    std::vector<float> v;
    for (double d : ctx.floatsAttr("value_floats"))
      v.push_back(static_cast<float>(d));
    return Tensor::fromVector<float>(DType::F32, {static_cast<int64_t>(v.size())}, v);
  }
  if (ctx.hasAttr("value_ints")) {
    std::vector<int64_t> v = ctx.intsAttr("value_ints");
    return Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(v.size())}, v);
  }
  return std::nullopt;
}

// Constant: no op here. Large tensors become weights named by the output;
// small ones become a `constant` op just before their first use (see
// ImportState::lookup), so tensors only read as axes or sizes leave no trace.
static Results convertConstant(NodeContext &ctx) {
  for (const char *unsupported : {"sparse_value", "value_string", "value_strings"})
    if (ctx.hasAttr(unsupported))
      return ctx.error(llvm::Twine("attribute '") + unsupported + "' is not supported");
  std::optional<Tensor> t = constantValue(ctx);
  if (!t) {
    if (!ctx.attrError().empty())
      return std::vector<Value *>{}; // reported by the caller
    return ctx.error("has no value attribute");
  }
  if (!ctx.hasOutput(0))
    return std::vector<Value *>{};
  ImportState &s = ctx.state();
  const std::string &name = ctx.node().output(0);
  auto shared = std::make_shared<const Tensor>(std::move(*t));
  s.knownTensors[name] = shared;
  if (shared->numElements() > s.opts.inlineConstantLimit)
    return std::vector<Value *>{s.addWeight(name, shared)};
  s.pending[name] = {shared, ctx.loc()};
  return std::vector<Value *>{};
}

// ConstantOfShape: the fill value is a one-element tensor (default f32 0),
// kept as dense<T[1]: [v]> whatever shape the exporter gave it.
static Results convertConstantOfShape(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * shape, ctx.indexInput(0));
  Tensor value = Tensor::fromVector<float>(DType::F32, {1}, {0.0f});
  if (ctx.hasAttr("value")) {
    std::optional<Tensor> t = ctx.tensorAttr("value");
    if (!t)
      return std::vector<Value *>{}; // attribute error, reported by the caller
    if (t->numElements() != 1)
      return ctx.error("attribute 'value' must hold one element, it has " +
                       llvm::Twine(t->numElements()));
    value = t->reshaped({1});
  }
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("constant_of_shape", {shape}, {{"value", value}}));
  return std::vector<Value *>{r};
}

static Results convertShape(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  std::map<std::string, Attribute> attrs;
  if (ctx.hasAttr("start"))
    attrs["start"] = ctx.intAttr("start", 0);
  if (ctx.hasAttr("end"))
    attrs["end"] = ctx.intAttr("end", 0);
  GENC_ASSIGN_OR_RETURN(Value * r, ctx.emit1("shape", {x}, attrs));
  return std::vector<Value *>{r};
}

void addConstantConverters(ConverterTable &t) {
  t["Constant"] = convertConstant;
  t["ConstantOfShape"] = convertConstantOfShape;
  t["Shape"] = convertShape;
  t["Range"] = directConverter("range", 3);
}

} // namespace genc
