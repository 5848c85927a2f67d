// Values made from attributes and shapes: constant, dims, shape,
// constant_of_shape, range.
#include "runtime/cpu/ops/OpKernels.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace genrt::cpu {
namespace {

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

Error constantKernel(KernelContext &, const AttrMap &attrs, const Ins &, Outs &outs) {
  const Tensor *v = attrTensor(attrs, "value");
  if (!v)
    return kernelError("missing attribute 'value' (a dense<...> tensor)");
  outs[0] = toDomain(*v);
  return Error::success();
}

// {value = shape<d0, d1, ...>} -> i64[k] (or i64[] for a rank-0 result) of the
// dims evaluated under the argument bindings.
Error dimsKernel(KernelContext &ctx, const AttrMap &attrs, const Ins &, Outs &outs) {
  const DimList *dl = attrDims(attrs, "value");
  if (!dl)
    return kernelError("missing attribute 'value' (a shape<...> list)");
  std::vector<int64_t> vals;
  for (const Dim &d : dl->dims) {
    auto v = d.evaluate(*ctx.symbols);
    if (!v) {
      std::string unbound;
      for (const auto &s : d.symbols())
        if (!ctx.symbols->count(s))
          unbound += (unbound.empty() ? "'" : ", '") + s + "'";
      return kernelError("dim " + d.str() + " uses " + unbound +
                         ", which no function argument binds");
    }
    vals.push_back(*v);
  }
  const bool scalar = ctx.resultRanks && ctx.resultRanks->size() == 1 && (*ctx.resultRanks)[0] == 0;
  if (scalar && vals.size() != 1)
    return kernelError("a rank-0 result needs exactly one dim, got " +
                       std::to_string(vals.size()));
  outs[0] = Tensor::fromVector<int64_t>(
      DType::I64, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(vals.size())},
      vals);
  return Error::success();
}

// x[d0..dn] {start, end} -> i64[end - start]: ONNX Shape with clamped bounds.
Error shapeKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const int64_t r = ins[0].rank();
  auto clampBound = [r](int64_t v) {
    if (v < 0)
      v += r;
    return std::max<int64_t>(0, std::min(v, r));
  };
  int64_t s = clampBound(attrInt(attrs, "start", 0)), e = clampBound(attrInt(attrs, "end", r));
  std::vector<int64_t> dims;
  for (int64_t i = s; i < e; ++i)
    dims.push_back(ins[0].shape()[i]);
  outs[0] = Tensor::fromVector<int64_t>(DType::I64, {int64_t(dims.size())}, dims);
  return Error::success();
}

// shape[k] {value = dense<T[1]: [v]>} -> T[shape] filled with v (default f32 0)
Error constantOfShapeKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  auto shape = intList(ins[0], "shape");
  if (!shape)
    return shape.takeError();
  Tensor v = Tensor::scalarF32(0.f);
  if (const Tensor *attr = attrTensor(attrs, "value")) {
    if (attr->numElements() != 1)
      return kernelError("value must have one element, got shape " + dimsStr(attr->shape()));
    v = toDomain(*attr);
  }
  auto y = newTensor(v.dtype(), *shape);
  if (!y)
    return y.takeError();
  const size_t es = dtypeSize(v.dtype());
  char *dst = y->data<char>();
  for (int64_t i = 0, n = y->numElements(); i < n; ++i)
    std::memcpy(dst + i * es, v.rawData(), es);
  outs[0] = std::move(*y);
  return Error::success();
}

// start, limit, delta (scalars) -> T[max(ceil((limit - start) / delta), 0)]
Error rangeKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const DType t = ins[0].dtype();
  for (size_t i = 1; i < 3; ++i)
    if (ins[i].dtype() != t)
      return kernelError(std::string("start, limit and delta must have one dtype, got ") +
                         dtypeName(t) + " and " + dtypeName(ins[i].dtype()));
  if (t == DType::I64) {
    auto s = intScalar(ins[0], "start"), l = intScalar(ins[1], "limit"),
         d = intScalar(ins[2], "delta");
    if (!s)
      return s.takeError();
    if (!l)
      return l.takeError();
    if (!d)
      return d.takeError();
    if (*d == 0)
      return kernelError("delta is 0");
    // Count in 128 bits: limit - start may overflow int64.
    __int128 span = static_cast<__int128>(*l) - *s, step = *d;
    __int128 n = 0;
    if ((span > 0 && step > 0) || (span < 0 && step < 0))
      n = (span + step - (step > 0 ? 1 : -1)) / step;
    if (n > kMaxTensorBytes / 8)
      return kernelError("range of " + std::to_string(static_cast<long long>(n)) +
                         " elements is too large");
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
      v[i] = static_cast<int64_t>(*s + static_cast<__int128>(i) * *d);
    outs[0] = Tensor::fromVector<int64_t>(DType::I64, {int64_t(n)}, v);
    return Error::success();
  }
  if (t != DType::F32)
    return kernelError(std::string("range on ") + dtypeName(t));
  auto s = floatScalar(ins[0], "start"), l = floatScalar(ins[1], "limit"),
       d = floatScalar(ins[2], "delta");
  if (!s)
    return s.takeError();
  if (!l)
    return l.takeError();
  if (!d)
    return d.takeError();
  if (*d == 0.f || !std::isfinite(*s) || !std::isfinite(*l) || !std::isfinite(*d))
    return kernelError("range needs finite bounds and a nonzero delta");
  double n = std::max(std::ceil((static_cast<double>(*l) - *s) / *d), 0.0);
  if (n > static_cast<double>(kMaxTensorBytes / 4))
    return kernelError("range of " + std::to_string(n) + " elements is too large");
  Tensor y(DType::F32, {static_cast<int64_t>(n)});
  float *py = y.data<float>();
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
    py[i] = *s + static_cast<float>(i) * *d;
  outs[0] = std::move(y);
  return Error::success();
}

} // namespace

void addShapeKernels(KernelTable &t) {
  t["constant"] = constantKernel;
  t["dims"] = dimsKernel;
  t["shape"] = shapeKernel;
  t["constant_of_shape"] = constantOfShapeKernel;
  t["range"] = rangeKernel;
}

} // namespace genrt::cpu
