// Helpers shared by the interpreter's kernels, and the kernel table.
#include "runtime/cpu/ops/OpKernels.h"

#include <algorithm>

namespace genrt::cpu {

const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    addElementwiseKernels(t);
    addMovementKernels(t);
    addReductionKernels(t);
    addLinalgKernels(t);
    addNBitsKernels(t);
    addShapeKernels(t);
    addAttentionKernels(t);
    addFusedKernels(t);
    return t;
  }();
  return table;
}

Kernel findKernel(const std::string &kind) {
  const KernelTable &t = kernelTable();
  auto it = t.find(kind);
  return it == t.end() ? nullptr : it->second;
}

Error kernelError(const std::string &msg) {
  return Error::make(msg);
}

std::string dimsStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

DType domainOf(DType t) {
  if (isFloat(t))
    return DType::F32;
  if (t == DType::Bool)
    return DType::Bool;
  return DType::I64;
}

Tensor toDomain(const Tensor &t) {
  DType d = domainOf(t.dtype());
  if (d == DType::Bool) { // kernels compare bools bytewise: make every true a 1
    const uint8_t *p = t.data<uint8_t>();
    const int64_t n = t.numElements();
    if (std::all_of(p, p + n, [](uint8_t b) { return b <= 1; }))
      return t;
    Tensor r(DType::Bool, t.shape());
    for (int64_t i = 0; i < n; ++i)
      r.data<uint8_t>()[i] = p[i] != 0;
    return r;
  }
  if (d == t.dtype())
    return t;
  if (t.dtype() == DType::F16 || t.dtype() == DType::BF16) {
    Tensor r(d, t.shape());
    const uint16_t *src = t.data<uint16_t>();
    float *dst = r.data<float>();
    const bool half = t.dtype() == DType::F16;
    for (int64_t i = 0, n = t.numElements(); i < n; ++i)
      dst[i] = half ? halfToFloat(src[i]) : bf16ToFloat(src[i]);
    return r;
  }
  return t.castTo(d); // f64 -> f32 rounds; narrow ints widen exactly
}

Expected<int64_t> checkedNumElements(const std::vector<int64_t> &shape, DType dt) {
  int64_t n = 1;
  const int64_t limit = kMaxTensorBytes / static_cast<int64_t>(dtypeSize(dt));
  bool tooBig = false;
  for (int64_t d : shape) {
    if (d < 0)
      return kernelError("negative dimension in shape " + dimsStr(shape));
    if (d == 0)
      return 0;
    if (n > limit / d)
      tooBig = true; // keep scanning: a 0 dim later makes it empty
    else
      n *= d;
  }
  if (tooBig)
    return kernelError("shape " + dimsStr(shape) + " is too large (over " +
                       std::to_string(kMaxTensorBytes >> 30) + " GiB)");
  return n;
}

Expected<Tensor> newTensor(DType dt, std::vector<int64_t> shape) {
  auto n = checkedNumElements(shape, dt);
  if (!n)
    return n.takeError();
  return Tensor(dt, std::move(shape));
}

Expected<Tensor> resultTensor(Tensor &preset, DType dt, std::vector<int64_t> shape) {
  if (preset.valid() && preset.rawData() && preset.dtype() == dt && preset.shape() == shape)
    return std::move(preset);
  return newTensor(dt, std::move(shape));
}

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return kernelError("axis " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Expected<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t> &a,
                                                     const std::vector<int64_t> &b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return kernelError("shapes " + dimsStr(a) + " and " + dimsStr(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Expected<std::vector<int64_t>> intList(const Tensor &t, const char *what) {
  if (t.rank() > 1)
    return kernelError(std::string(what) + " must be a 1-D tensor, got shape " +
                       dimsStr(t.shape()));
  if (t.dtype() != DType::I64)
    return kernelError(std::string(what) + " must be integer, got " + dtypeName(t.dtype()));
  const int64_t *p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.numElements());
}

Expected<int64_t> intScalar(const Tensor &t, const char *what) {
  if (t.numElements() != 1 || t.rank() > 1)
    return kernelError(std::string(what) + " must be a scalar, got shape " + dimsStr(t.shape()));
  if (t.dtype() != DType::I64)
    return kernelError(std::string(what) + " must be integer, got " + dtypeName(t.dtype()));
  return t.data<int64_t>()[0];
}

Expected<float> floatScalar(const Tensor &t, const char *what) {
  if (t.numElements() != 1 || t.rank() > 1)
    return kernelError(std::string(what) + " must be a scalar, got shape " + dimsStr(t.shape()));
  return static_cast<float>(t.getDouble(0));
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

int64_t product(const std::vector<int64_t> &shape, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    n *= shape[i];
  return n;
}

Error expectDType(const Tensor &t, DType want, const char *what) {
  if (t.dtype() == want)
    return Error::success();
  return kernelError(std::string(what) + " must be " + dtypeName(want) + ", got " +
                     dtypeName(t.dtype()));
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> s = stridesOf(in);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    st[lead + i] = in[i] == 1 ? 0 : s[i];
  return st;
}

} // namespace genrt::cpu
