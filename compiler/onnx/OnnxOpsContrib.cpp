// Converters for ops of the com.microsoft domain that genc reads:
// MatMulNBits (ONNX Runtime's 4/8-bit weight-only matmul, the form its
// quantizers and GenAI models write) becomes `matmul_nbits`
// (runtime/plan/NBitsLayout.h, docs/ir-ops.md).
//
//   MatMulNBits(A[..., K], B u8, scales, zero_points?, g_idx?, bias?)
//     {K, N, bits = 4, block_size, accuracy_level}
//   B [N, blocks, blob] (any shape of that many bytes), scales [N * blocks]
//   or [N, blocks], zero_points u8 [N * ceil(blocks * bits / 8)] or float
//   [N * blocks]; the weights become module weights of the IR's shapes.
//   g_idx (act-order, a permutation of K) is refused; bias becomes an add.
#include "compiler/onnx/ImportContext.h"
#include "runtime/plan/NBitsLayout.h"

namespace genc {

using Results = llvm::Expected<std::vector<Value *>>;

namespace {

std::string dims(const std::vector<int64_t> &s) { return genrt::nbitsShapeStr(s); }

// Input i as a module weight of `shape` (its element count checked by the
// caller): the initializer's weight reshaped in place when nothing read it
// yet, else a new weight of that shape.
llvm::Expected<Value *> weightInput(NodeContext &ctx, size_t i, const Tensor &t, std::vector<int64_t> shape) {
  ImportState &s = ctx.state();
  const std::string &name = ctx.inputName(i);
  auto data = std::make_shared<const Tensor>(t.reshaped(shape));
  auto it = s.values.find(name);
  if (it != s.values.end() && it->second->isWeight() && !s.func.hasUses(it->second)) {
    Value *w = it->second;
    w->setType(Type{t.dtype(), Shape(shape.begin(), shape.end())});
    w->setData(std::move(data));
    return w;
  }
  return s.addWeight(name, std::move(data));
}

// An initializer input, or an error naming its role.
llvm::Expected<const Tensor *> initializer(NodeContext &ctx, size_t i, const char *role) {
  auto known = ctx.state().knownTensors.find(ctx.inputName(i));
  if (known == ctx.state().knownTensors.end())
    return ctx.error(llvm::Twine(role) + " " + quoted(ctx.inputName(i)) +
                     " is not an initializer (genc reads quantized weights as constants)");
  return known->second.get();
}

Results convertMatMulNBits(NodeContext &ctx) {
  if (ctx.hasInput(4))
    return ctx.error("g_idx " + quoted(ctx.inputName(4)) +
                     " is not supported (act-order: a permutation of K); quantize without act-order");
  for (const char *a : {"K", "N", "block_size"})
    if (!ctx.hasAttr(a))
      return ctx.error(llvm::Twine("attribute ") + a + " is required");
  genrt::NBitsShape ns{ctx.intAttr("bits", 4), ctx.intAttr("block_size", 0), ctx.intAttr("K", 0), ctx.intAttr("N", 0)};
  if (!ctx.attrError().empty())
    return ctx.error(ctx.attrError());
  if (std::string bad = genrt::checkNBitsShape(ns); !bad.empty())
    return ctx.error("attribute " + bad);
  GENC_ASSIGN_OR_RETURN(Value * a, ctx.input(0));
  if (!isFloat(a->dtype()))
    return ctx.error("A " + quoted(ctx.inputName(0)) + " is " + a->type().str() + ", not a float tensor");
  std::optional<Dim> k = ctx.inputDim(0, -1);
  if (!k || !k->isConstant() || k->constant() != ns.K)
    return ctx.error("A " + quoted(ctx.inputName(0)) + " is " + a->type().str() + ", its last dim is not K = " +
                     llvm::Twine(ns.K));
  const int64_t blocks = ns.blocks();

  GENC_ASSIGN_OR_RETURN(const Tensor *b, initializer(ctx, 1, "B"));
  const int64_t wantB = ns.N * blocks * ns.blobBytes();
  if (b->dtype() != DType::U8 || b->numElements() != wantB)
    return ctx.error("B " + quoted(ctx.inputName(1)) + " is " + dtypeName(b->dtype()) + dims(b->shape()) +
                     ", expected u8 of N x blocks x blob = " + llvm::Twine(ns.N) + " x " + llvm::Twine(blocks) + " x " +
                     llvm::Twine(ns.blobBytes()) + " = " + llvm::Twine(wantB) + " bytes");

  GENC_ASSIGN_OR_RETURN(const Tensor *sc, initializer(ctx, 2, "scales"));
  if (!isFloat(sc->dtype()) || sc->dtype() == DType::F64 || sc->numElements() != ns.N * blocks ||
      (sc->rank() == 2 && sc->shape()[0] != ns.N) || sc->rank() > 2)
    return ctx.error("scales " + quoted(ctx.inputName(2)) + " are " + dtypeName(sc->dtype()) + dims(sc->shape()) +
                     ", expected f32, f16 or bf16 [N * blocks] = [" + llvm::Twine(ns.N * blocks) + "] or [N, blocks] = " +
                     dims({ns.N, blocks}));

  const Tensor *zp = nullptr;
  std::vector<int64_t> zpShape;
  if (ctx.hasInput(3)) {
    GENC_ASSIGN_OR_RETURN(zp, initializer(ctx, 3, "zero_points"));
    const bool packed = zp->dtype() == DType::U8;
    const int64_t per = packed ? ns.zeroPointBytes() : blocks;
    if ((!packed && zp->dtype() != sc->dtype()) || zp->numElements() != ns.N * per)
      return ctx.error("zero_points " + quoted(ctx.inputName(3)) + " are " + dtypeName(zp->dtype()) +
                       dims(zp->shape()) + ", expected u8 [N * ceil(blocks * bits / 8)] = [" +
                       llvm::Twine(ns.N * ns.zeroPointBytes()) + "] or " + dtypeName(sc->dtype()) + " [N * blocks] = [" +
                       llvm::Twine(ns.N * blocks) + "]");
    zpShape = {ns.N, per};
  }

  GENC_ASSIGN_OR_RETURN(Value * wb, weightInput(ctx, 1, *b, {ns.N, blocks, ns.blobBytes()}));
  GENC_ASSIGN_OR_RETURN(Value * ws, weightInput(ctx, 2, *sc, {ns.N, blocks}));
  std::vector<Value *> operands{a, wb, ws};
  if (zp) {
    GENC_ASSIGN_OR_RETURN(Value * wz, weightInput(ctx, 3, *zp, zpShape));
    operands.push_back(wz);
  }
  GENC_ASSIGN_OR_RETURN(Value * y, ctx.emit1("matmul_nbits", operands,
                                             {{"bits", ns.bits}, {"block_size", ns.blockSize}, {"n", ns.N}}));
  if (ctx.hasInput(5)) {
    GENC_ASSIGN_OR_RETURN(Value * bias, ctx.input(5));
    if (bias->rank() != 1 || bias->shape()[0] != Dim(ns.N) || bias->dtype() != a->dtype())
      return ctx.error("bias " + quoted(ctx.inputName(5)) + " is " + bias->type().str() + ", expected " +
                       dtypeName(a->dtype()) + "[" + llvm::Twine(ns.N) + "]");
    GENC_ASSIGN_OR_RETURN(y, ctx.emit1("add", {y, bias}));
  }
  return std::vector<Value *>{y};
}

} // namespace

const ConvertFn *lookupContribConverter(const std::string &domain, const std::string &opType) {
  static const ConvertFn matMulNBits = convertMatMulNBits;
  if (domain == "com.microsoft" && opType == "MatMulNBits")
    return &matMulNBits;
  return nullptr;
}

} // namespace genc
