// Reductions and normalisations: reduce_mean, softmax, layer_norm, rms_norm,
// cumsum. Float math runs in runtime/cpu/Kernels (fp32 accumulation), so the
// CPU executor computes exactly what the interpreter does.
#include "runtime/cpu/ops/OpKernels.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace genrt::cpu {
namespace {

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

/// A copy of an f32 tensor that the caller may write.
Tensor copyOf(const Tensor &x) {
  Tensor y(x.dtype(), x.shape());
  if (x.numBytes())
    std::memcpy(y.data<char>(), x.rawData(), x.numBytes());
  return y;
}

// x[...] {axes (default all), keepdims} -> mean over axes.
Error reduceMeanKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  if (auto e = expectDType(x, DType::F32, "operand"))
    return e;
  const int64_t r = x.rank();
  std::vector<int64_t> axes = attrInts(attrs, "axes");
  std::vector<bool> reduced(r, axes.empty()); // no axes: reduce all (noop_with_empty_axes = 0)
  for (int64_t a : axes) {
    auto ax = normalizeAxis(a, r);
    if (!ax)
      return ax.takeError();
    reduced[*ax] = true;
  }
  std::vector<int64_t> keepShape, outShape;
  int64_t count = 1;
  for (int64_t d = 0; d < r; ++d) {
    keepShape.push_back(reduced[d] ? 1 : x.shape()[d]);
    if (reduced[d])
      count *= x.shape()[d];
    else
      outShape.push_back(x.shape()[d]);
  }
  if (attrInt(attrs, "keepdims", 1))
    outShape = keepShape;
  Tensor y(DType::F32, outShape);
  float *py = y.data<float>();
  const float *px = x.data<float>();
  // Contiguous reduced block [a, b): rows of a 3-D view; else scatter-add
  // every input element into its output slot (both sum in input order).
  int64_t a = 0, b = r;
  while (a < r && !reduced[a])
    ++a;
  while (b > a && !reduced[b - 1])
    --b;
  bool contiguous = std::all_of(reduced.begin() + a, reduced.begin() + b, [](bool v) { return v; });
  if (contiguous) {
    genrt::cpu::meanAxis(px, py, product(x.shape(), 0, a), product(x.shape(), a, b),
                         product(x.shape(), b));
  } else {
    forEachBroadcast<1>(x.shape(), {&keepShape},
                        [&](int64_t o, const std::array<int64_t, 1> &off) { py[off[0]] += px[o]; });
    for (int64_t i = 0, n = y.numElements(); i < n; ++i)
      py[i] /= static_cast<float>(count);
  }
  outs[0] = std::move(y);
  return Error::success();
}

// x[outer, n, inner] {axis} -> softmax along axis
Error softmaxKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  if (auto e = expectDType(x, DType::F32, "operand"))
    return e;
  auto axis = normalizeAxis(attrInt(attrs, "axis", -1), x.rank());
  if (!axis)
    return axis.takeError();
  Tensor y = copyOf(x);
  genrt::cpu::softmax(y.data<float>(), product(x.shape(), 0, *axis), x.shape()[*axis],
                      product(x.shape(), *axis + 1));
  outs[0] = std::move(y);
  return Error::success();
}

/// `p` (scale or bias) as a flat [n] array over the normalised dims `norm`;
/// ONNX lets it be anything that broadcasts to them.
Expected<Tensor> paramOver(const Tensor &p, const std::vector<int64_t> &norm,
                                 const char *what) {
  if (auto e = expectDType(p, DType::F32, what))
    return std::move(e);
  auto b = broadcastShapes(norm, p.shape());
  if (!b || *b != norm) {
    if (!b)
      (void)(b.takeError());
    return kernelError(std::string(what) + " of shape " + dimsStr(p.shape()) +
                       " does not broadcast to the normalised dims " + dimsStr(norm));
  }
  if (p.shape() == norm)
    return p;
  Tensor full(DType::F32, norm);
  float *dst = full.data<float>();
  const float *src = p.data<float>();
  forEachBroadcast<1>(norm, {&p.shape()},
                      [&](int64_t o, const std::array<int64_t, 1> &off) { dst[o] = src[off[0]]; });
  return full;
}

// x[rows..., norm...], scale[norm...] [, bias[norm...]] {axis, epsilon}
//   -> y: normalised over dims axis..rank-1
template <bool IsRms> Error normKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  if (auto e = expectDType(x, DType::F32, "operand"))
    return e;
  auto axis = normalizeAxis(attrInt(attrs, "axis", -1), x.rank());
  if (!axis)
    return axis.takeError();
  std::vector<int64_t> norm(x.shape().begin() + *axis, x.shape().end());
  auto scale = paramOver(ins[1], norm, "scale");
  if (!scale)
    return scale.takeError();
  const float eps = static_cast<float>(attrFloat(attrs, "epsilon", 1e-5));
  const int64_t rows = product(x.shape(), 0, *axis), n = product(norm);
  Tensor y(DType::F32, x.shape());
  if (IsRms) {
    genrt::cpu::rmsNormRows(x.data<float>(), scale->data<float>(), y.data<float>(), rows, n, eps);
  } else {
    Expected<Tensor> bias = Tensor();
    if (ins.size() > 2) {
      bias = paramOver(ins[2], norm, "bias");
      if (!bias)
        return bias.takeError();
    }
    genrt::cpu::layerNormRows(x.data<float>(), scale->data<float>(),
                              ins.size() > 2 ? bias->data<float>() : nullptr, y.data<float>(),
                              rows, n, eps);
  }
  outs[0] = std::move(y);
  return Error::success();
}

// x[outer, n, inner] {axis, exclusive, reverse} -> running sums along axis
template <typename T> void cumsum(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,
                                  bool exclusive, bool reverse) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      T acc = 0;
      for (int64_t t = 0; t < n; ++t) {
        int64_t i = reverse ? n - 1 - t : t;
        int64_t off = (o * n + i) * inner + j;
        if (exclusive) {
          y[off] = acc;
          acc += x[off];
        } else {
          acc += x[off];
          y[off] = acc;
        }
      }
    }
}

Error cumsumKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  auto axis = normalizeAxis(attrInt(attrs, "axis", 0), x.rank());
  if (!axis)
    return axis.takeError();
  const bool excl = attrInt(attrs, "exclusive", 0) != 0, rev = attrInt(attrs, "reverse", 0) != 0;
  const int64_t outer = product(x.shape(), 0, *axis), n = x.shape()[*axis],
                inner = product(x.shape(), *axis + 1);
  Tensor y(x.dtype(), x.shape());
  if (x.dtype() == DType::F32)
    cumsum(x.data<float>(), y.data<float>(), outer, n, inner, excl, rev);
  else if (x.dtype() == DType::I64)
    cumsum(x.data<int64_t>(), y.data<int64_t>(), outer, n, inner, excl, rev);
  else
    return kernelError(std::string("cumsum on ") + dtypeName(x.dtype()));
  outs[0] = std::move(y);
  return Error::success();
}

} // namespace

void addReductionKernels(KernelTable &t) {
  t["reduce_mean"] = reduceMeanKernel;
  t["softmax"] = softmaxKernel;
  t["layer_norm"] = normKernel<false>;
  t["rms_norm"] = normKernel<true>;
  t["cumsum"] = cumsumKernel;
}

} // namespace genrt::cpu
