// Converters for data movement: reshapes, squeezes, slices, splits, gathers.
// Most opset differences live here (axes / sizes as attributes or inputs).
#include "compiler/onnx/ImportContext.h"

namespace genc {

using Results = llvm::Expected<std::vector<Value *>>;

static Results one(llvm::Expected<Value *> v) {
  if (!v)
    return v.takeError();
  return std::vector<Value *>{*v};
}

static Results convertReshape(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * shape, ctx.indexInput(1));
  std::map<std::string, Attribute> attrs;
  if (int64_t allowZero = ctx.intAttr("allowzero", 0))
    attrs["allowzero"] = allowZero;
  return one(ctx.emit1("reshape", {x, shape}, attrs));
}

static Results convertFlatten(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  return one(ctx.emit1("flatten", {x}, {{"axis", ctx.intAttr("axis", 1)}}));
}

static Results convertExpand(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * shape, ctx.indexInput(1));
  return one(ctx.emit1("expand", {x, shape}));
}

static Results convertTile(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * repeats, ctx.indexInput(1));
  return one(ctx.emit1("tile", {x, repeats}));
}

static Results convertTranspose(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  std::map<std::string, Attribute> attrs;
  if (ctx.hasAttr("perm"))
    attrs["perm"] = ctx.intsAttr("perm");
  return one(ctx.emit1("transpose", {x}, attrs));
}

/// Axes of Squeeze / Unsqueeze: an input since opset 13, an attribute before.
static llvm::Expected<std::optional<std::vector<int64_t>>> squeezeAxes(NodeContext &ctx) {
  if (ctx.hasInput(1)) {
    GENC_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.intsInput(1, "axes"));
    return std::optional<std::vector<int64_t>>(axes);
  }
  if (ctx.hasAttr("axes"))
    return std::optional<std::vector<int64_t>>(ctx.intsAttr("axes"));
  return std::optional<std::vector<int64_t>>();
}

static Results convertSqueeze(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(auto axes, squeezeAxes(ctx));
  std::map<std::string, Attribute> attrs;
  // No axes (or an empty list) squeezes every size-1 dim.
  if (axes && !axes->empty())
    attrs["axes"] = *axes;
  return one(ctx.emit1("squeeze", {x}, attrs));
}

static Results convertUnsqueeze(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(auto axes, squeezeAxes(ctx));
  if (!axes || axes->empty())
    return ctx.error("axes are required");
  return one(ctx.emit1("unsqueeze", {x}, {{"axes", *axes}}));
}

static Results convertConcat(NodeContext &ctx) {
  if (!ctx.hasAttr("axis"))
    return ctx.error("attribute 'axis' is required");
  std::vector<Value *> operands;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    GENC_ASSIGN_OR_RETURN(Value * v, ctx.input(i));
    operands.push_back(v);
  }
  if (operands.empty())
    return ctx.error("needs at least one input");
  return one(ctx.emit1("concat", operands, {{"axis", ctx.intAttr("axis", 0)}}));
}

// Split: sizes from the `split` input (opset 13+) or attribute (before); else
// equal parts, one per output (opset 18 `num_outputs`: the last part may be
// smaller). The IR always carries explicit sizes, so an equal split needs the
// dim's size at import time.
static Results convertSplit(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  int64_t axis = ctx.intAttr("axis", 0);
  int64_t n = static_cast<int64_t>(ctx.numOutputs());
  if (n == 0)
    return ctx.error("has no outputs");
  std::vector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    GENC_ASSIGN_OR_RETURN(sizes, ctx.intsInput(1, "split"));
  } else if (ctx.hasAttr("split")) {
    sizes = ctx.intsAttr("split");
  } else {
    bool hasNum = ctx.hasAttr("num_outputs");
    int64_t parts = hasNum ? ctx.intAttr("num_outputs", n) : n;
    if (parts != n)
      return ctx.error("num_outputs = " + llvm::Twine(parts) + " but the node has " +
                       llvm::Twine(n) + " outputs");
    std::optional<Dim> d = ctx.inputDim(0, axis);
    if (!d || !d->isConstant())
      return ctx.error("cannot split dim " + llvm::Twine(axis) + " of " + quoted(ctx.inputName(0)) +
                       " into equal parts: its size is " +
                       (d ? "symbolic (" + d->str() + ")" : std::string("unknown")) +
                       " and no split sizes are given");
    int64_t total = d->constant();
    int64_t chunk = hasNum ? (total + n - 1) / n : total / n;
    if (!hasNum && total % n != 0)
      return ctx.error("dim " + llvm::Twine(axis) + " of size " + llvm::Twine(total) +
                       " does not split evenly into " + llvm::Twine(n) + " outputs");
    if (total - chunk * (n - 1) < 0)
      return ctx.error("dim " + llvm::Twine(axis) + " of size " + llvm::Twine(total) +
                       " cannot be split into " + llvm::Twine(n) + " outputs");
    sizes.assign(static_cast<size_t>(n - 1), chunk);
    sizes.push_back(total - chunk * (n - 1));
  }
  if (static_cast<int64_t>(sizes.size()) != n)
    return ctx.error("split has " + llvm::Twine(sizes.size()) + " sizes for " + llvm::Twine(n) +
                     " outputs");
  for (int64_t s : sizes)
    if (s < 0)
      return ctx.error("negative split size " + llvm::Twine(s));
  GENC_ASSIGN_OR_RETURN(Op * op, ctx.emit("split", {x}, {{"axis", axis}, {"split", sizes}},
                                          static_cast<unsigned>(n)));
  return op->results();
}

// Slice(data, starts, ends [, axes [, steps]]): the IR always has all five,
// so omitted axes (0..n-1) and steps (all 1) become constants.
static Results convertSlice(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * x, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * starts, ctx.indexInput(1));
  GENC_ASSIGN_OR_RETURN(Value * ends, ctx.indexInput(2));
  std::optional<int64_t> n;
  if (!ctx.hasInput(3) || !ctx.hasInput(4)) {
    n = ctx.inputLength(1);
    if (!n)
      n = ctx.inputLength(2);
    if (!n)
      return ctx.error("cannot supply the default axes / steps: the length of starts (" +
                       quoted(ctx.inputName(1)) + ") is unknown");
  }
  auto range = [&](bool ones) {
    std::vector<int64_t> v(static_cast<size_t>(*n));
    for (int64_t i = 0; i < *n; ++i)
      v[static_cast<size_t>(i)] = ones ? 1 : i;
    return Tensor::fromVector<int64_t>(DType::I64, {*n}, v);
  };
  Value *axes = nullptr, *steps = nullptr;
  if (ctx.hasInput(3)) {
    GENC_ASSIGN_OR_RETURN(axes, ctx.indexInput(3));
  } else {
    GENC_ASSIGN_OR_RETURN(axes, ctx.constant(range(false)));
  }
  if (ctx.hasInput(4)) {
    GENC_ASSIGN_OR_RETURN(steps, ctx.indexInput(4));
  } else {
    GENC_ASSIGN_OR_RETURN(steps, ctx.constant(range(true)));
  }
  return one(ctx.emit1("slice", {x, starts, ends, axes, steps}));
}

static Results convertGather(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * data, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * indices, ctx.input(1));
  return one(ctx.emit1("gather", {data, indices}, {{"axis", ctx.intAttr("axis", 0)}}));
}

static Results convertGatherElements(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * data, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * indices, ctx.input(1));
  return one(ctx.emit1("gather_elements", {data, indices}, {{"axis", ctx.intAttr("axis", 0)}}));
}

static Results convertGatherND(NodeContext &ctx) {
  GENC_ASSIGN_OR_RETURN(Value * data, ctx.input(0));
  GENC_ASSIGN_OR_RETURN(Value * indices, ctx.input(1));
  return one(ctx.emit1("gather_nd", {data, indices},
                       {{"batch_dims", ctx.intAttr("batch_dims", 0)}}));
}

void addShapingConverters(ConverterTable &t) {
  t["Reshape"] = convertReshape;
  t["Flatten"] = convertFlatten;
  t["Expand"] = convertExpand;
  t["Tile"] = convertTile;
  t["Transpose"] = convertTranspose;
  t["Squeeze"] = convertSqueeze;
  t["Unsqueeze"] = convertUnsqueeze;
  t["Concat"] = convertConcat;
  t["Split"] = convertSplit;
  t["Slice"] = convertSlice;
  t["Gather"] = convertGather;
  t["GatherElements"] = convertGatherElements;
  t["GatherND"] = convertGatherND;
}

} // namespace genc
