// Elementwise kernels with numpy broadcasting: arithmetic, comparisons,
// logic, where, unary math, activations, cast.
//
//   binary:  a[...], b[...] -> y[broadcast(a, b)]
//   where:   cond[...], x[...], y[...] -> out[broadcast(cond, x, y)]
//   unary:   x[...] -> y[...]
#include "runtime/cpu/ops/OpKernels.h"
#include "runtime/cpu/Kernels.h"

#include <cmath>
#include <limits>

namespace genrt::cpu {
namespace {

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

/// y = f(a, b) over the broadcast shape; A, B are the input element types.
template <typename A, typename B, typename R, typename F>
Expected<Tensor> binaryMap(const Tensor &a, const Tensor &b, DType rt, F f) {
  auto shape = broadcastShapes(a.shape(), b.shape());
  if (!shape)
    return shape.takeError();
  auto y = newTensor(rt, *shape);
  if (!y)
    return y.takeError();
  const A *pa = a.data<A>();
  const B *pb = b.data<B>();
  R *py = y->template data<R>();
  forEachBroadcast<2>(*shape, {&a.shape(), &b.shape()},
                      [&](int64_t o, const std::array<int64_t, 2> &off) {
                        py[o] = f(pa[off[0]], pb[off[1]]);
                      });
  return std::move(*y);
}

Error sameDTypes(const Tensor &a, const Tensor &b) {
  if (a.dtype() == b.dtype())
    return Error::success();
  return kernelError(std::string("operand dtypes differ: ") + dtypeName(a.dtype()) + " and " +
                     dtypeName(b.dtype()));
}

// ---- arithmetic ------------------------------------------------------------

enum class Arith { Add, Sub, Mul, Div, Max, Min };

template <Arith K> Expected<Tensor> arith(const Tensor &a, const Tensor &b) {
  if (auto e = sameDTypes(a, b))
    return std::move(e);
  if (a.dtype() == DType::F32)
    return binaryMap<float, float, float>(a, b, DType::F32, [](float x, float y) {
      switch (K) {
      case Arith::Add: return x + y;
      case Arith::Sub: return x - y;
      case Arith::Mul: return x * y;
      case Arith::Div: return x / y;
      case Arith::Max: return (x > y || std::isnan(x)) ? x : y; // NaN propagates, as in torch
      case Arith::Min: return (x < y || std::isnan(x)) ? x : y;
      }
      return 0.f;
    });
  if (a.dtype() != DType::I64)
    return kernelError(std::string("arithmetic on ") + dtypeName(a.dtype()));
  if (K == Arith::Div) {
    // Integer division by zero (or INT64_MIN / -1) traps on x86: check first.
    auto shape = broadcastShapes(a.shape(), b.shape());
    if (!shape)
      return shape.takeError();
    bool bad = false;
    forEachBroadcast<2>(*shape, {&a.shape(), &b.shape()},
                        [&](int64_t, const std::array<int64_t, 2> &off) {
                          int64_t x = a.data<int64_t>()[off[0]], y = b.data<int64_t>()[off[1]];
                          bad |= y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min());
                        });
    if (bad)
      return kernelError("integer division by zero (or overflow)");
  }
  return binaryMap<int64_t, int64_t, int64_t>(a, b, DType::I64, [](int64_t x, int64_t y) {
    // Wrapping add/sub/mul: compute in unsigned so overflow is defined.
    using U = uint64_t;
    switch (K) {
    case Arith::Add: return static_cast<int64_t>(U(x) + U(y));
    case Arith::Sub: return static_cast<int64_t>(U(x) - U(y));
    case Arith::Mul: return static_cast<int64_t>(U(x) * U(y));
    case Arith::Div: return x / y; // C++ truncates toward zero, as ONNX
    case Arith::Max: return x > y ? x : y;
    case Arith::Min: return x < y ? x : y;
    }
    return int64_t(0);
  });
}

template <Arith K> Error arithKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  // max/min are variadic: fold left to right.
  auto acc = arith<K>(ins[0], ins.size() > 1 ? ins[1] : ins[0]);
  if (!acc)
    return acc.takeError();
  for (size_t i = 2; i < ins.size(); ++i) {
    acc = arith<K>(*acc, ins[i]);
    if (!acc)
      return acc.takeError();
  }
  outs[0] = std::move(*acc);
  return Error::success();
}

Error powKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const Tensor &a = ins[0], &b = ins[1];
  Expected<Tensor> y = Tensor();
  if (a.dtype() == DType::F32) {
    Tensor bf = b.dtype() == DType::F32 ? b : b.castTo(DType::F32);
    y = binaryMap<float, float, float>(a, bf, DType::F32,
                                       [](float x, float e) { return std::pow(x, e); });
  } else if (a.dtype() == DType::I64) {
    Tensor bf = b.dtype() == DType::F32 ? b : b.castTo(DType::F32);
    y = binaryMap<int64_t, float, int64_t>(a, bf, DType::I64, [](int64_t x, float e) {
      double r = std::pow(static_cast<double>(x), static_cast<double>(e));
      return std::isfinite(r) && std::fabs(r) < 9.2e18 ? static_cast<int64_t>(r) : int64_t(0);
    });
  } else {
    return kernelError(std::string("pow on ") + dtypeName(a.dtype()));
  }
  if (!y)
    return y.takeError();
  outs[0] = std::move(*y);
  return Error::success();
}

// ---- comparisons and logic -------------------------------------------------

enum class Cmp { Eq, Lt, Le, Gt, Ge };

template <Cmp K, typename T> bool compare(T x, T y) {
  switch (K) {
  case Cmp::Eq: return x == y;
  case Cmp::Lt: return x < y;
  case Cmp::Le: return x <= y;
  case Cmp::Gt: return x > y;
  case Cmp::Ge: return x >= y;
  }
  return false;
}

template <Cmp K> Error cmpKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const Tensor &a = ins[0], &b = ins[1];
  if (auto e = sameDTypes(a, b))
    return e;
  Expected<Tensor> y = Tensor();
  if (a.dtype() == DType::F32)
    y = binaryMap<float, float, uint8_t>(a, b, DType::Bool, compare<K, float>);
  else if (a.dtype() == DType::I64)
    y = binaryMap<int64_t, int64_t, uint8_t>(a, b, DType::Bool, compare<K, int64_t>);
  else
    y = binaryMap<uint8_t, uint8_t, uint8_t>(a, b, DType::Bool, compare<K, uint8_t>);
  if (!y)
    return y.takeError();
  outs[0] = std::move(*y);
  return Error::success();
}

template <bool IsAnd> Error logicKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  if (auto e = expectDType(ins[0], DType::Bool, "operand 0"))
    return e;
  if (auto e = expectDType(ins[1], DType::Bool, "operand 1"))
    return e;
  auto y = binaryMap<uint8_t, uint8_t, uint8_t>(ins[0], ins[1], DType::Bool,
                                                [](uint8_t x, uint8_t y) -> uint8_t {
                                                  return IsAnd ? (x && y) : (x || y);
                                                });
  if (!y)
    return y.takeError();
  outs[0] = std::move(*y);
  return Error::success();
}

Error notKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  if (auto e = expectDType(ins[0], DType::Bool, "operand 0"))
    return e;
  Tensor y(DType::Bool, ins[0].shape());
  const uint8_t *x = ins[0].data<uint8_t>();
  uint8_t *py = y.data<uint8_t>();
  for (int64_t i = 0, n = y.numElements(); i < n; ++i)
    py[i] = !x[i];
  outs[0] = std::move(y);
  return Error::success();
}

Error whereKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const Tensor &c = ins[0], &x = ins[1], &y = ins[2];
  if (auto e = expectDType(c, DType::Bool, "condition"))
    return e;
  if (auto e = sameDTypes(x, y))
    return e;
  auto s1 = broadcastShapes(c.shape(), x.shape());
  if (!s1)
    return s1.takeError();
  auto shape = broadcastShapes(*s1, y.shape());
  if (!shape)
    return shape.takeError();
  auto out = newTensor(x.dtype(), *shape);
  if (!out)
    return out.takeError();
  const size_t es = dtypeSize(x.dtype());
  const uint8_t *pc = c.data<uint8_t>();
  const char *px = static_cast<const char *>(x.rawData());
  const char *py = static_cast<const char *>(y.rawData());
  char *po = out->data<char>();
  forEachBroadcast<3>(*shape, {&c.shape(), &x.shape(), &y.shape()},
                      [&](int64_t o, const std::array<int64_t, 3> &off) {
                        const char *src = pc[off[0]] ? px + off[1] * es : py + off[2] * es;
                        std::copy(src, src + es, po + o * es);
                      });
  outs[0] = std::move(*out);
  return Error::success();
}

// ---- unary -----------------------------------------------------------------

template <typename F> Error floatUnary(const Ins &ins, Outs &outs, F f) {
  if (auto e = expectDType(ins[0], DType::F32, "operand"))
    return e;
  Tensor y(DType::F32, ins[0].shape());
  const float *x = ins[0].data<float>();
  float *py = y.data<float>();
  for (int64_t i = 0, n = y.numElements(); i < n; ++i)
    py[i] = f(x[i]);
  outs[0] = std::move(y);
  return Error::success();
}

#define GENC_FLOAT_UNARY(NAME, EXPR)                                                           \
  Error NAME##Kernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {           \
    return floatUnary(ins, outs, [](float x) { return EXPR; });                              \
  }
GENC_FLOAT_UNARY(exp, std::exp(x))
GENC_FLOAT_UNARY(log, std::log(x))
GENC_FLOAT_UNARY(sqrt, std::sqrt(x))
GENC_FLOAT_UNARY(reciprocal, 1.f / x)
GENC_FLOAT_UNARY(relu, x < 0.f ? 0.f : x) // NaN stays NaN
GENC_FLOAT_UNARY(tanh, std::tanh(x))
GENC_FLOAT_UNARY(erf, std::erf(x))
GENC_FLOAT_UNARY(sin, std::sin(x))
GENC_FLOAT_UNARY(cos, std::cos(x))
#undef GENC_FLOAT_UNARY

// sigmoid and silu a row at a time (vectorised, cpu/Activation.h).
template <void (*Row)(const float *, float *, int64_t)>
Error floatRowUnary(const Ins &ins, Outs &outs) {
  if (auto e = expectDType(ins[0], DType::F32, "operand"))
    return e;
  Tensor y(DType::F32, ins[0].shape());
  Row(ins[0].data<float>(), y.data<float>(), y.numElements());
  outs[0] = std::move(y);
  return Error::success();
}
Error sigmoidKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  return floatRowUnary<genrt::cpu::sigmoidRow>(ins, outs);
}
Error siluKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  return floatRowUnary<genrt::cpu::siluRow>(ins, outs);
}

Error geluKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  std::string approx = attrStr(attrs, "approximate", "none");
  if (approx == "none")
    return floatUnary(ins, outs, genrt::cpu::geluErf);
  if (approx == "tanh")
    return floatUnary(ins, outs, genrt::cpu::geluTanh);
  return kernelError("unknown approximate = \"" + approx + "\" (expected \"none\" or \"tanh\")");
}

// abs and neg also apply to integers.
template <bool IsAbs> Error signKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  if (x.dtype() == DType::F32)
    return floatUnary(ins, outs, [](float v) { return IsAbs ? std::fabs(v) : -v; });
  if (x.dtype() != DType::I64)
    return kernelError(std::string("operand must be f32 or i64, got ") + dtypeName(x.dtype()));
  Tensor y(DType::I64, x.shape());
  const int64_t *px = x.data<int64_t>();
  int64_t *py = y.data<int64_t>();
  for (int64_t i = 0, n = y.numElements(); i < n; ++i) {
    uint64_t u = static_cast<uint64_t>(px[i]); // wraps for INT64_MIN like numpy
    py[i] = static_cast<int64_t>((IsAbs && px[i] >= 0) ? u : uint64_t(0) - u);
  }
  outs[0] = std::move(y);
  return Error::success();
}

Error identityKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  outs[0] = ins[0]; // shares the bytes: values are immutable
  return Error::success();
}

// Inference dropout: y = x, and an all-true mask if asked for.
Error dropoutKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  outs[0] = ins[0];
  if (outs.size() > 1) {
    Tensor mask(DType::Bool, ins[0].shape());
    std::fill(mask.data<uint8_t>(), mask.data<uint8_t>() + mask.numElements(), uint8_t(1));
    outs[1] = std::move(mask);
  }
  return Error::success();
}

// ---- cast ------------------------------------------------------------------

/// float -> integer of `bits` bits: truncate toward zero, then wrap to the
/// width. Out-of-range values are undefined in ONNX; here they saturate to
/// int64 first, and NaN becomes 0, so nothing is undefined in C++.
int64_t floatToInt(float v, DType to) {
  int64_t i;
  if (std::isnan(v))
    i = 0;
  else if (v >= 9.2233720368547758e18f)
    i = std::numeric_limits<int64_t>::max();
  else if (v <= -9.2233720368547758e18f)
    i = std::numeric_limits<int64_t>::min();
  else
    i = static_cast<int64_t>(std::trunc(v));
  return i;
}

/// Wraps an int64 to the range of `to`, as a C cast to that type would.
int64_t wrapInt(int64_t v, DType to) {
  switch (to) {
  case DType::I32: return static_cast<int32_t>(static_cast<uint32_t>(v));
  case DType::I8: return static_cast<int8_t>(static_cast<uint8_t>(v));
  case DType::U8: return static_cast<uint8_t>(v);
  default: return v;
  }
}

/// Rounds an f32 to the precision of `to` (f16 / bf16), keeping it as f32.
float roundFloat(float v, DType to) {
  if (to == DType::F16)
    return halfToFloat(floatToHalf(v));
  if (to == DType::BF16)
    return bf16ToFloat(floatToBf16(v));
  return v;
}

// Casts to the value domain: a cast to f16 rounds to half precision but the
// result is held as f32, a cast to i32 wraps to 32 bits but is held as i64.
Error castKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  std::string toName = attrStr(attrs, "to", "");
  auto to = parseDType(toName);
  if (!to)
    return kernelError("unknown target type to = \"" + toName + "\"");
  const Tensor &x = ins[0];
  const int64_t n = x.numElements();
  Tensor y(domainOf(*to), x.shape());
  if (*to == DType::Bool) {
    uint8_t *py = y.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i)
      py[i] = x.dtype() == DType::F32 ? x.data<float>()[i] != 0.f : x.getInt(i) != 0;
  } else if (isFloat(*to)) {
    float *py = y.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      float v = x.dtype() == DType::F32 ? x.data<float>()[i]
                                        : static_cast<float>(x.getInt(i)); // round to nearest
      py[i] = roundFloat(v, *to);
    }
  } else {
    int64_t *py = y.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = x.dtype() == DType::F32 ? floatToInt(x.data<float>()[i], *to) : x.getInt(i);
      py[i] = wrapInt(v, *to);
    }
  }
  outs[0] = std::move(y);
  return Error::success();
}

} // namespace

void addElementwiseKernels(KernelTable &t) {
  t["add"] = arithKernel<Arith::Add>;
  t["sub"] = arithKernel<Arith::Sub>;
  t["mul"] = arithKernel<Arith::Mul>;
  t["div"] = arithKernel<Arith::Div>;
  t["max"] = arithKernel<Arith::Max>;
  t["min"] = arithKernel<Arith::Min>;
  t["pow"] = powKernel;
  t["equal"] = cmpKernel<Cmp::Eq>;
  t["less"] = cmpKernel<Cmp::Lt>;
  t["less_or_equal"] = cmpKernel<Cmp::Le>;
  t["greater"] = cmpKernel<Cmp::Gt>;
  t["greater_or_equal"] = cmpKernel<Cmp::Ge>;
  t["and"] = logicKernel<true>;
  t["or"] = logicKernel<false>;
  t["not"] = notKernel;
  t["where"] = whereKernel;
  t["abs"] = signKernel<true>;
  t["neg"] = signKernel<false>;
  t["exp"] = expKernel;
  t["log"] = logKernel;
  t["sqrt"] = sqrtKernel;
  t["reciprocal"] = reciprocalKernel;
  t["relu"] = reluKernel;
  t["sigmoid"] = sigmoidKernel;
  t["tanh"] = tanhKernel;
  t["erf"] = erfKernel;
  t["sin"] = sinKernel;
  t["cos"] = cosKernel;
  t["silu"] = siluKernel;
  t["gelu"] = geluKernel;
  t["cast"] = castKernel;
  t["identity"] = identityKernel;
  t["dropout"] = dropoutKernel;
}

} // namespace genrt::cpu
