#include "runtime/cpu/FusedRows.h"

#include "runtime/cpu/FusedBody.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>

namespace genrt::cpu {
std::vector<int64_t> shapeAtTokens(const Shape &s, int64_t tokens) {
  std::vector<int64_t> out;
  for (const Dim &d : s)
    out.push_back(d.isConstant() ? d.constant() : tokens);
  return out;
}

namespace {

} // namespace

bool tokenAxisOf(const Shape &shape, TokenAxis &out) {
  out = TokenAxis();
  size_t at = shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].isConstant())
      continue;
    if (at != shape.size() || !shape[i].isSymbol() || shape[i].symbolName() != "tokens")
      return false; // a second symbol, or a product over tokens
    at = i;
  }
  if (at == shape.size())
    return true; // no token axis
  for (size_t i = 0; i < at; ++i)
    if (shape[i].constant() != 1)
      return false;
  out.present = true;
  out.rowElements = 1;
  for (size_t i = at + 1; i < shape.size(); ++i)
    out.rowElements *= shape[i].constant();
  return true;
}

namespace {


// Tokens [t0, t0 + n) of `t` (its token axis `ax`), sharing t's bytes.
Tensor slice(const Tensor &t, const TokenAxis &ax, const Shape &shape, int64_t t0, int64_t n) {
  if (!ax.present)
    return t;
  auto *base = static_cast<uint8_t *>(const_cast<void *>(t.rawData()));
  return Tensor::view(t.dtype(), shapeAtTokens(shape, n), base + t0 * ax.rowElements * dtypeSize(t.dtype()));
}

// The first `fill` elements random (the rest as the tensor starts: zeros).
Tensor randomTensor(DType dt, std::vector<int64_t> shape, std::mt19937 &rng, int64_t fill) {
  Tensor t(dt, std::move(shape));
  std::normal_distribution<float> g(0.f, 1.f);
  for (int64_t i = 0; i < std::min(fill, t.numElements()); ++i) {
    if (dt == DType::F32)
      t.data<float>()[i] = g(rng);
    else if (dt == DType::I64)
      t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 2);
    else if (dt == DType::Bool)
      t.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 2);
  }
  return t;
}

} // namespace

bool FusedRows::prepare(const Program &body, const std::vector<Tensor> &weights) {
  body_ = nullptr;
  args_.clear();
  results_.clear();
  for (int32_t a : body.arguments) {
    TokenAxis ax;
    if (!tokenAxisOf(body.values[a].shape, ax))
      return false;
    args_.push_back(ax);
  }
  bool any = false;
  for (int32_t r : body.outputs) {
    TokenAxis ax;
    if (!tokenAxisOf(body.values[r].shape, ax) || !ax.present)
      return false; // a result must be per token to be written piecewise
    results_.push_back(ax);
    any = true;
  }
  for (const ValueInfo &v : body.values) // a value over `rows` mixes tokens
    for (const Dim &d : v.shape)
      for (const std::string &s : d.symbols())
        if (s != "tokens")
          return false;
  if (!any)
    return false;
  // The probe: 5 tokens whole, then as 2 + 3; the same bits or no.
  const int64_t T = 5, split = 2;
  std::mt19937 rng(7);
  std::vector<Tensor> ins;
  for (size_t i = 0; i < body.arguments.size(); ++i) {
    const int32_t a = body.arguments[i];
    DType dt = body.values[a].dtype;
    if (dt != DType::F32 && dt != DType::I64 && dt != DType::Bool)
      return false;
    // An operand without tokens (an embedding table: SmolLM2's is 28 M
    // floats, seconds of random numbers at every load) is read at the
    // probe's ids, 0 and 1: its first elements random are enough.
    const int64_t fill = args_[i].present ? INT64_MAX : int64_t(1) << 16;
    ins.push_back(randomTensor(dt, shapeAtTokens(body.values[a].shape, T), rng, fill));
  }
  auto runOn = [&](int64_t t0, int64_t n, std::vector<Tensor> &outs) {
    std::map<std::string, int64_t> syms{{"tokens", n}};
    KernelContext ctx;
    ctx.symbols = &syms;
    std::vector<Tensor> pieceIns;
    for (size_t i = 0; i < ins.size(); ++i)
      pieceIns.push_back(slice(ins[i], args_[i], body.values[body.arguments[i]].shape, t0, n));
    outs.assign(body.outputs.size(), Tensor());
    return !runFusedBody(body, weights, ctx, pieceIns, outs);
  };
  std::vector<Tensor> whole, a, b;
  if (!runOn(0, T, whole) || !runOn(0, split, a) || !runOn(split, T - split, b))
    return false;
  for (size_t i = 0; i < whole.size(); ++i) {
    size_t bytesA = a[i].numBytes(), bytesB = b[i].numBytes();
    if (whole[i].numBytes() != bytesA + bytesB ||
        std::memcmp(whole[i].rawData(), a[i].rawData(), bytesA) != 0 ||
        std::memcmp(static_cast<const uint8_t *>(whole[i].rawData()) + bytesA, b[i].rawData(), bytesB) != 0)
      return false;
  }
  body_ = &body;
  return true;
}

Error FusedRows::run(const std::vector<Tensor> &weights, const std::map<std::string, int64_t> &symbols,
                     ThreadPool &pool, const std::vector<Tensor> &ins, std::vector<Tensor> &outs) const {
  const Program &body = *body_;
  const int64_t T = symbols.at("tokens");
  for (size_t i = 0; i < outs.size(); ++i)
    if (!outs[i].valid() || outs[i].numElements() != T * results_[i].rowElements)
      return Error::make("fused body '" + body.name + "': a result has no planned buffer");
  // Pieces of at least 16 tokens: below that a body is a few microseconds.
  std::mutex mu;
  Error failure;
  pool.parallelFor(T, 16, [&](int64_t t0, int64_t t1) {
    std::map<std::string, int64_t> syms = symbols;
    syms["tokens"] = t1 - t0;
    KernelContext ctx;
    ctx.symbols = &syms;
    std::vector<Tensor> pieceIns, pieceOuts(outs.size());
    for (size_t i = 0; i < ins.size(); ++i)
      pieceIns.push_back(slice(ins[i], args_[i], body.values[body.arguments[i]].shape, t0, t1 - t0));
    Error e = runFusedBody(body, weights, ctx, pieceIns, pieceOuts);
    for (size_t i = 0; !e && i < outs.size(); ++i) {
      Tensor dst = slice(outs[i], results_[i], body.values[body.outputs[i]].shape, t0, t1 - t0);
      if (pieceOuts[i].numBytes() != dst.numBytes() || pieceOuts[i].dtype() != dst.dtype())
        e = Error::make("fused body '" + body.name + "': a piece's result does not fit its slice");
      else if (dst.numBytes())
        std::memcpy(const_cast<void *>(dst.rawData()), pieceOuts[i].rawData(), dst.numBytes());
    }
    if (e) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure)
        failure = std::move(e);
    }
  });
  return failure;
}

} // namespace genrt::cpu
