// Data-movement kernels: reshape family, transpose, expand, concat, split,
// slice, gather, gather_nd, trilu. They move bytes, so each works for every
// domain type (f32, i64, bool) through the element size.
#include "runtime/cpu/ops/OpKernels.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

namespace genrt::cpu {
namespace {

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

/// dst[o + j] = src[off + j * stride] for j < n, elements of type T (a typed
/// loop: per-element memcpy calls made transposes several times slower).
template <typename T>
void gatherRun(const char *src, int64_t off, int64_t stride, char *dst, int64_t o, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    T v;
    std::memcpy(&v, src + (off + j * stride) * sizeof(T), sizeof(T));
    std::memcpy(dst + (o + j) * sizeof(T), &v, sizeof(T));
  }
}

/// dst[outShape] (row-major, contiguous) = src[base + Σ i_d · srcStrides[d]]
/// (strides in elements, may be 0 or negative). Runs of the innermost dim
/// with stride 1 are memcpy'd.
void copyStrided(const char *src, int64_t base, const std::vector<int64_t> &srcStrides,
                 char *dst, const std::vector<int64_t> &outShape, size_t es) {
  const int64_t total = product(outShape);
  if (total == 0)
    return;
  const size_t R = outShape.size();
  if (R == 0) {
    std::memcpy(dst, src + base * es, es);
    return;
  }
  const int64_t inner = outShape[R - 1], innerStride = srcStrides[R - 1];
  std::vector<int64_t> idx(R, 0);
  int64_t off = base;
  for (int64_t o = 0; o < total; o += inner) {
    if (innerStride == 1)
      std::memcpy(dst + o * es, src + off * es, inner * es);
    else if (es == 4)
      gatherRun<uint32_t>(src, off, innerStride, dst, o, inner);
    else if (es == 8)
      gatherRun<uint64_t>(src, off, innerStride, dst, o, inner);
    else
      gatherRun<uint8_t>(src, off, innerStride, dst, o, inner);
    for (int64_t d = static_cast<int64_t>(R) - 2; d >= 0; --d) {
      ++idx[d];
      off += srcStrides[d];
      if (idx[d] < outShape[d])
        break;
      off -= srcStrides[d] * outShape[d];
      idx[d] = 0;
    }
  }
}

const char *bytes(const Tensor &t) { return static_cast<const char *>(t.rawData()); }

// ---- views: reshape, flatten, squeeze, unsqueeze ---------------------------

// x[...] , shape[k] (i64) -> y[shape'], where 0 copies x's dim (unless
// allowzero) and one -1 takes what is left.
Error reshapeKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  auto spec = intList(ins[1], "shape");
  if (!spec)
    return spec.takeError();
  const bool allowZero = attrInt(attrs, "allowzero", 0) != 0;
  std::vector<int64_t> out = *spec, known = *spec;
  int64_t inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t v = out[i];
    if (v == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= x.rank())
        return kernelError("shape " + dimsStr(*spec) + " copies dim " + std::to_string(i) +
                           " (0) but the input " + dimsStr(x.shape()) + " has rank " +
                           std::to_string(x.rank()));
      out[i] = known[i] = x.shape()[i];
    } else if (v == -1) {
      if (inferred >= 0)
        return kernelError("shape " + dimsStr(*spec) + " has more than one -1");
      inferred = static_cast<int64_t>(i);
      known[i] = 1;
    } else if (v < -1) {
      return kernelError("shape " + dimsStr(*spec) + " has a negative dim");
    }
  }
  auto knownN = checkedNumElements(known, x.dtype());
  if (!knownN)
    return knownN.takeError();
  const int64_t total = x.numElements();
  if (inferred >= 0) {
    if (*knownN == 0 || total % *knownN != 0)
      return kernelError("cannot reshape " + dimsStr(x.shape()) + " to " + dimsStr(*spec) +
                         ": the -1 dim cannot be inferred");
    out[inferred] = total / *knownN;
  } else if (*knownN != total) {
    return kernelError("cannot reshape " + dimsStr(x.shape()) + " (" + std::to_string(total) +
                       " elements) to " + dimsStr(out));
  }
  outs[0] = x.reshaped(out);
  return Error::success();
}

// x[d0, ..., dn] -> y[d0·…·d(axis-1), d(axis)·…·dn]
Error flattenKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  int64_t axis = attrInt(attrs, "axis", 1);
  if (axis < -x.rank() || axis > x.rank())
    return kernelError("axis " + std::to_string(axis) + " is out of range [-" +
                       std::to_string(x.rank()) + ", " + std::to_string(x.rank()) + "]");
  if (axis < 0)
    axis += x.rank();
  outs[0] = x.reshaped({product(x.shape(), 0, axis), product(x.shape(), axis)});
  return Error::success();
}

Error squeezeKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  std::set<int64_t> drop;
  if (attrs.count("axes")) {
    for (int64_t a : attrInts(attrs, "axes")) {
      auto ax = normalizeAxis(a, x.rank());
      if (!ax)
        return ax.takeError();
      if (x.shape()[*ax] != 1)
        return kernelError("cannot squeeze axis " + std::to_string(a) + " of shape " +
                           dimsStr(x.shape()) + ": its size is not 1");
      drop.insert(*ax);
    }
  } else {
    for (int64_t i = 0; i < x.rank(); ++i)
      if (x.shape()[i] == 1)
        drop.insert(i);
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop.count(i))
      out.push_back(x.shape()[i]);
  outs[0] = x.reshaped(out);
  return Error::success();
}

// axes index the output: x[2, 3] {axes = [0, -1]} -> y[1, 2, 3, 1]
Error unsqueezeKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  if (!attrs.count("axes"))
    return kernelError("missing attribute 'axes'");
  std::vector<int64_t> axes = attrInts(attrs, "axes");
  const int64_t outRank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> isNew(outRank, false);
  for (int64_t a : axes) {
    auto ax = normalizeAxis(a, outRank);
    if (!ax)
      return ax.takeError();
    if (isNew[*ax])
      return kernelError("axis " + std::to_string(a) + " is repeated");
    isNew[*ax] = true;
  }
  std::vector<int64_t> out;
  size_t j = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(isNew[i] ? 1 : x.shape()[j++]);
  outs[0] = x.reshaped(out);
  return Error::success();
}

// ---- transpose, expand -----------------------------------------------------

// x[d0..dn] {perm} -> y[d(perm[0]), ..., d(perm[n])]
Error transposeKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  const int64_t r = x.rank();
  std::vector<int64_t> perm = attrInts(attrs, "perm");
  if (!attrs.count("perm"))
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r)
    return kernelError("perm " + dimsStr(perm) + " does not match rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  for (int64_t &p : perm) {
    auto ax = normalizeAxis(p, r);
    if (!ax || seen[*ax]) {
      if (!ax)
        (void)(ax.takeError());
      return kernelError("perm " + dimsStr(attrInts(attrs, "perm")) + " is not a permutation");
    }
    seen[*ax] = true;
    p = *ax;
  }
  std::vector<int64_t> inStrides = stridesOf(x.shape()), outShape(r), srcStrides(r);
  for (int64_t i = 0; i < r; ++i) {
    outShape[i] = x.shape()[perm[i]];
    srcStrides[i] = inStrides[perm[i]];
  }
  Tensor y(x.dtype(), outShape);
  copyStrided(bytes(x), 0, srcStrides, y.data<char>(), outShape, dtypeSize(x.dtype()));
  outs[0] = std::move(y);
  return Error::success();
}

// x[...], shape[k] -> y[broadcast(x.shape, shape)] (ONNX Expand broadcasts both ways)
Error expandKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  auto spec = intList(ins[1], "shape");
  if (!spec)
    return spec.takeError();
  for (int64_t d : *spec)
    if (d < 0)
      return kernelError("shape " + dimsStr(*spec) + " has a negative dim");
  auto outShape = broadcastShapes(x.shape(), *spec);
  if (!outShape)
    return outShape.takeError();
  auto y = newTensor(x.dtype(), *outShape);
  if (!y)
    return y.takeError();
  copyStrided(bytes(x), 0, broadcastStrides(x.shape(), *outShape), y->data<char>(), *outShape,
              dtypeSize(x.dtype()));
  outs[0] = std::move(*y);
  return Error::success();
}

// x[d...] -> y[d · repeats ...], y[i...] = x[i mod d ...] (ONNX Tile).
Error tileKernel(KernelContext &, const AttrMap &, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  auto reps = intList(ins[1], "repeats");
  if (!reps)
    return reps.takeError();
  if (static_cast<int64_t>(reps->size()) != x.rank())
    return kernelError("repeats " + dimsStr(*reps) + " does not match a rank-" +
                       std::to_string(x.rank()) + " input");
  std::vector<int64_t> outShape = x.shape();
  for (size_t i = 0; i < reps->size(); ++i) {
    if ((*reps)[i] < 0)
      return kernelError("repeats " + dimsStr(*reps) + " has a negative entry");
    outShape[i] *= (*reps)[i];
  }
  auto y = newTensor(x.dtype(), outShape);
  if (!y)
    return y.takeError();
  size_t es = dtypeSize(x.dtype());
  int64_t n = y->numElements(), r = x.rank();
  const char *src = bytes(x);
  char *dst = y->data<char>();
  std::vector<int64_t> at(r, 0);
  for (int64_t o = 0; o < n; ++o) {
    int64_t in = 0;
    for (int64_t d = 0; d < r; ++d)
      in = in * x.shape()[d] + at[d] % x.shape()[d];
    std::memcpy(dst + o * es, src + in * es, es);
    for (int64_t d = r - 1; d >= 0 && ++at[d] == outShape[d]; --d)
      at[d] = 0;
  }
  outs[0] = std::move(*y);
  return Error::success();
}

// ---- concat, split ---------------------------------------------------------

// x_i[..., a_i, ...] along axis -> y[..., Σ a_i, ...]
Error concatKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &first = ins[0];
  auto axis = normalizeAxis(attrInt(attrs, "axis", 0), first.rank());
  if (!axis)
    return axis.takeError();
  std::vector<int64_t> outShape = first.shape();
  outShape[*axis] = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Tensor &t = ins[i];
    if (t.dtype() != first.dtype())
      return kernelError("operand " + std::to_string(i) + " has dtype " + dtypeName(t.dtype()) +
                         ", operand 0 has " + dtypeName(first.dtype()));
    bool ok = t.rank() == first.rank();
    for (int64_t d = 0; ok && d < t.rank(); ++d)
      ok = d == *axis || t.shape()[d] == first.shape()[d];
    if (!ok)
      return kernelError("operand " + std::to_string(i) + " has shape " + dimsStr(t.shape()) +
                         ", which does not match " + dimsStr(first.shape()) +
                         " outside axis " + std::to_string(*axis));
    outShape[*axis] += t.shape()[*axis];
  }
  Tensor y(first.dtype(), outShape);
  const size_t es = dtypeSize(first.dtype());
  const int64_t outer = product(outShape, 0, *axis), inner = product(outShape, *axis + 1);
  char *dst = y.data<char>();
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor &t : ins) {
      size_t chunk = t.shape()[*axis] * inner * es;
      std::memcpy(dst, bytes(t) + o * chunk, chunk);
      dst += chunk;
    }
  outs[0] = std::move(y);
  return Error::success();
}

// x[..., Σ s_i, ...] -> y_i[..., s_i, ...]; without `split`, equal parts
// (the last one smaller when the dim does not divide, as ONNX num_outputs).
Error splitKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  auto axis = normalizeAxis(attrInt(attrs, "axis", 0), x.rank());
  if (!axis)
    return axis.takeError();
  const int64_t dim = x.shape()[*axis], n = static_cast<int64_t>(outs.size());
  std::vector<int64_t> sizes = attrInts(attrs, "split");
  if (!attrs.count("split")) {
    int64_t part = (dim + n - 1) / n;
    for (int64_t i = 0, left = dim; i < n; ++i, left -= part)
      sizes.push_back(std::max<int64_t>(0, std::min(part, left)));
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return kernelError("split " + dimsStr(sizes) + " has a negative size");
    sum += s;
  }
  if (static_cast<int64_t>(sizes.size()) != n || sum != dim)
    return kernelError("split " + dimsStr(sizes) + " does not cut dim " + std::to_string(*axis) +
                       " of " + dimsStr(x.shape()) + " into " + std::to_string(n) + " results");
  const size_t es = dtypeSize(x.dtype());
  const int64_t outer = product(x.shape(), 0, *axis), inner = product(x.shape(), *axis + 1);
  int64_t begin = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> shape = x.shape();
    shape[*axis] = sizes[i];
    Tensor y(x.dtype(), shape);
    char *dst = y.data<char>();
    size_t chunk = sizes[i] * inner * es;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + o * chunk, bytes(x) + (o * dim + begin) * inner * es, chunk);
    begin += sizes[i];
    outs[i] = std::move(y);
  }
  return Error::success();
}

// ---- slice -----------------------------------------------------------------

// x[...], starts[k], ends[k], axes[k], steps[k] -> y. ONNX rules: negative
// starts/ends count from the end; then clamp to [0, d] (step > 0) or
// [-1, d-1] (step < 0); INT64_MAX / INT64_MIN mean "to the end".
Error sliceKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  const int64_t r = x.rank();
  auto starts = intList(ins[1], "starts");
  if (!starts)
    return starts.takeError();
  auto ends = intList(ins[2], "ends");
  if (!ends)
    return ends.takeError();
  const size_t k = starts->size();
  std::vector<int64_t> axes, steps(k, 1);
  if (ins.size() > 3) {
    auto a = intList(ins[3], "axes");
    if (!a)
      return a.takeError();
    axes = *a;
  } else {
    for (size_t i = 0; i < k; ++i)
      axes.push_back(static_cast<int64_t>(i));
  }
  if (ins.size() > 4) {
    auto s = intList(ins[4], "steps");
    if (!s)
      return s.takeError();
    steps = *s;
  }
  if (ends->size() != k || axes.size() != k || steps.size() != k)
    return kernelError("starts, ends, axes and steps have different lengths (" +
                       std::to_string(k) + ", " + std::to_string(ends->size()) + ", " +
                       std::to_string(axes.size()) + ", " + std::to_string(steps.size()) + ")");
  std::vector<int64_t> begin(r, 0), step(r, 1), outShape = x.shape();
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < k; ++i) {
    auto ax = normalizeAxis(axes[i], r);
    if (!ax)
      return ax.takeError();
    if (seen[*ax])
      return kernelError("axis " + std::to_string(axes[i]) + " is repeated");
    seen[*ax] = true;
    const int64_t d = x.shape()[*ax], st = steps[i];
    if (st == 0)
      return kernelError("step 0 on axis " + std::to_string(axes[i]));
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (s < 0)
      s += d; // cannot overflow: s < 0 <= d
    if (e < 0)
      e += d;
    int64_t count = 0;
    if (d == 0) {
      s = 0;
    } else if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count = e > s ? (e - s - 1) / st + 1 : 0; // ceil((e - s) / st), no overflow
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      if (s > e)
        count = st == std::numeric_limits<int64_t>::min() ? 1 : (s - e - 1) / -st + 1;
    }
    begin[*ax] = s;
    step[*ax] = count > 1 ? st : 1; // a huge step taken once must not overflow strides
    outShape[*ax] = count;
  }
  std::vector<int64_t> inStrides = stridesOf(x.shape()), srcStrides(r);
  int64_t base = 0;
  for (int64_t d = 0; d < r; ++d) {
    srcStrides[d] = inStrides[d] * step[d];
    base += begin[d] * inStrides[d];
  }
  Tensor y(x.dtype(), outShape);
  copyStrided(bytes(x), base, srcStrides, y.data<char>(), outShape, dtypeSize(x.dtype()));
  outs[0] = std::move(y);
  return Error::success();
}

// ---- gather, gather_nd -----------------------------------------------------

// data[a..., n, b...], indices[i...] -> y[a..., i..., b...]; indices in [-n, n).
Error gatherKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &data = ins[0], &idx = ins[1];
  if (auto e = expectDType(idx, DType::I64, "indices"))
    return e;
  auto axis = normalizeAxis(attrInt(attrs, "axis", 0), data.rank());
  if (!axis)
    return axis.takeError();
  const int64_t n = data.shape()[*axis], count = idx.numElements();
  const int64_t *pi = idx.data<int64_t>();
  for (int64_t j = 0; j < count; ++j)
    if (pi[j] < -n || pi[j] >= n)
      return kernelError("index " + std::to_string(pi[j]) + " is out of range for axis " +
                         std::to_string(*axis) + " of size " + std::to_string(n));
  std::vector<int64_t> outShape(data.shape().begin(), data.shape().begin() + *axis);
  outShape.insert(outShape.end(), idx.shape().begin(), idx.shape().end());
  outShape.insert(outShape.end(), data.shape().begin() + *axis + 1, data.shape().end());
  auto y = newTensor(data.dtype(), outShape);
  if (!y)
    return y.takeError();
  const size_t es = dtypeSize(data.dtype());
  const int64_t outer = product(data.shape(), 0, *axis), inner = product(data.shape(), *axis + 1);
  char *dst = y->data<char>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t i = pi[j] < 0 ? pi[j] + n : pi[j];
      std::memcpy(dst, bytes(data) + ((o * n + i) * inner) * es, inner * es);
      dst += inner * es;
    }
  outs[0] = std::move(*y);
  return Error::success();
}

// data[d...], indices[i...] (same rank) {axis} -> y[i...] with
// y[p] = data[p with p[axis] = indices[p]] (ONNX GatherElements).
Error gatherElementsKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &data = ins[0], &idx = ins[1];
  if (auto e = expectDType(idx, DType::I64, "indices"))
    return e;
  const int64_t r = data.rank();
  if (r == 0 || idx.rank() != r)
    return kernelError("data " + dimsStr(data.shape()) + " and indices " + dimsStr(idx.shape()) +
                       " must have one rank >= 1");
  auto axis = normalizeAxis(attrInt(attrs, "axis", 0), r);
  if (!axis)
    return axis.takeError();
  for (int64_t d = 0; d < r; ++d)
    if (d != *axis && idx.shape()[d] > data.shape()[d])
      return kernelError("indices " + dimsStr(idx.shape()) + " reach past data " +
                         dimsStr(data.shape()) + " on axis " + std::to_string(d));
  auto y = newTensor(data.dtype(), idx.shape());
  if (!y)
    return y.takeError();
  const int64_t n = data.shape()[*axis], count = idx.numElements();
  const int64_t *pi = idx.data<int64_t>();
  const size_t es = dtypeSize(data.dtype());
  std::vector<int64_t> at(r, 0);
  char *dst = y->data<char>();
  for (int64_t o = 0; o < count; ++o) {
    int64_t k = pi[o];
    if (k < -n || k >= n)
      return kernelError("index " + std::to_string(k) + " is out of range for axis " +
                         std::to_string(*axis) + " of size " + std::to_string(n));
    int64_t src = 0;
    for (int64_t d = 0; d < r; ++d)
      src = src * data.shape()[d] + (d == *axis ? (k < 0 ? k + n : k) : at[d]);
    std::memcpy(dst + o * es, bytes(data) + src * es, es);
    for (int64_t d = r - 1; d >= 0 && ++at[d] == idx.shape()[d]; --d)
      at[d] = 0;
  }
  outs[0] = std::move(*y);
  return Error::success();
}

// data[B..., D...], indices[B..., T..., m] {batch_dims = |B|}
//   -> y[B..., T..., D[m:]...]: each m-tuple picks a slice of data within its batch.
Error gatherNDKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &data = ins[0], &idx = ins[1];
  if (auto e = expectDType(idx, DType::I64, "indices"))
    return e;
  const int64_t b = attrInt(attrs, "batch_dims", 0), r = data.rank(), q = idx.rank();
  if (q < 1)
    return kernelError("indices must have rank >= 1");
  const int64_t m = idx.shape()[q - 1];
  if (b < 0 || b >= q || b >= r)
    return kernelError("batch_dims " + std::to_string(b) + " must be below both ranks (" +
                       std::to_string(r) + ", " + std::to_string(q) + ")");
  if (m < 1 || m > r - b)
    return kernelError("index tuples of length " + std::to_string(m) + " do not fit data " +
                       dimsStr(data.shape()) + " with batch_dims " + std::to_string(b));
  for (int64_t d = 0; d < b; ++d)
    if (data.shape()[d] != idx.shape()[d])
      return kernelError("batch dim " + std::to_string(d) + " differs: data " +
                         dimsStr(data.shape()) + ", indices " + dimsStr(idx.shape()));
  std::vector<int64_t> outShape(idx.shape().begin(), idx.shape().end() - 1);
  outShape.insert(outShape.end(), data.shape().begin() + b + m, data.shape().end());
  auto y = newTensor(data.dtype(), outShape);
  if (!y)
    return y.takeError();
  const int64_t batches = product(data.shape(), 0, b);
  const int64_t tuples = product(idx.shape(), b, q - 1);
  const int64_t slice = product(data.shape(), b + m);       // elements per picked slice
  const int64_t batchSize = product(data.shape(), b);       // elements per batch of data
  const std::vector<int64_t> dstr = stridesOf(data.shape()); // strides of data
  const size_t es = dtypeSize(data.dtype());
  const int64_t *pi = idx.data<int64_t>();
  char *dst = y->data<char>();
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t *tuple = pi + (bi * tuples + t) * m;
      int64_t off = bi * batchSize;
      for (int64_t k = 0; k < m; ++k) {
        int64_t n = data.shape()[b + k], i = tuple[k];
        if (i < -n || i >= n)
          return kernelError("index " + std::to_string(i) + " is out of range for dim " +
                             std::to_string(b + k) + " of size " + std::to_string(n));
        off += (i < 0 ? i + n : i) * dstr[b + k];
      }
      std::memcpy(dst, bytes(data) + off * es, slice * es);
      dst += slice * es;
    }
  outs[0] = std::move(*y);
  return Error::success();
}

// ---- trilu -----------------------------------------------------------------

// x[..., N, M] [, k] {upper} -> y: keeps x[i, j] where j - i >= k (upper) or
// j - i <= k (lower), zero elsewhere.
Error triluKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &x = ins[0];
  if (x.rank() < 2)
    return kernelError("input must have rank >= 2, got " + dimsStr(x.shape()));
  int64_t k = 0;
  if (ins.size() > 1) {
    auto kv = intScalar(ins[1], "k");
    if (!kv)
      return kv.takeError();
    k = *kv;
  }
  const bool upper = attrInt(attrs, "upper", 1) != 0;
  const int64_t N = x.shape()[x.rank() - 2], M = x.shape()[x.rank() - 1];
  const int64_t mats = product(x.shape(), 0, x.rank() - 2);
  const size_t es = dtypeSize(x.dtype());
  Tensor y(x.dtype(), x.shape()); // zero-filled
  char *dst = y.data<char>();
  for (int64_t b = 0; b < mats; ++b)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < M; ++j) {
        // j - i compared without overflow for huge k
        bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (keep) {
          size_t off = ((b * N + i) * M + j) * es;
          std::memcpy(dst + off, bytes(x) + off, es);
        }
      }
  outs[0] = std::move(y);
  return Error::success();
}

} // namespace

void addMovementKernels(KernelTable &t) {
  t["reshape"] = reshapeKernel;
  t["flatten"] = flattenKernel;
  t["squeeze"] = squeezeKernel;
  t["unsqueeze"] = unsqueezeKernel;
  t["transpose"] = transposeKernel;
  t["expand"] = expandKernel;
  t["tile"] = tileKernel;
  t["concat"] = concatKernel;
  t["split"] = splitKernel;
  t["slice"] = sliceKernel;
  t["gather"] = gatherKernel;
  t["gather_elements"] = gatherElementsKernel;
  t["gather_nd"] = gatherNDKernel;
  t["trilu"] = triluKernel;
}

} // namespace genrt::cpu
