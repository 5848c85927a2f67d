// matmul_nbits (docs/ir-ops.md): a[..., K] times a 4-bit or 8-bit
// block-quantized weight (runtime/plan/NBitsLayout.h), on genrt::cpu::matmulNBits.
//
// The CPU executor hands the kernel the codes and packed zero points as
// stored (u8); the interpreter holds integers as i64, so they are narrowed
// back here (its weights are converted once a run). Scales and float zero
// points arrive widened to f32 from both.
#include "runtime/cpu/MatmulNBits.h"
#include "runtime/cpu/ops/OpKernels.h"

namespace genrt::cpu {
namespace {

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

// u8 bytes of an integer operand: as stored, or narrowed from the
// interpreter's i64 (each element checked to be a byte).
Expected<const uint8_t *> bytesOf(const Tensor &t, std::vector<uint8_t> &keep, const char *what) {
  if (t.dtype() == DType::U8)
    return t.data<uint8_t>();
  if (t.dtype() != DType::I64)
    return kernelError(std::string(what) + " must be u8, got " + dtypeName(t.dtype()));
  keep.resize(static_cast<size_t>(t.numElements()));
  const int64_t *p = t.data<int64_t>();
  for (size_t i = 0; i < keep.size(); ++i) {
    if (p[i] < 0 || p[i] > 255)
      return kernelError(std::string(what) + " holds " + std::to_string(p[i]) + ", not a byte");
    keep[i] = static_cast<uint8_t>(p[i]);
  }
  return keep.data();
}

// a[..., K] · W -> y[..., N]; b [N, blocks, blob], scales [N, blocks],
// zero_points [N, zeroPointBytes] u8 or [N, blocks] float.
Error matmulNBitsKernel(KernelContext &ctx, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &a = ins[0], &b = ins[1], &scales = ins[2];
  if (auto e = expectDType(a, DType::F32, "operand 0"))
    return e;
  if (auto e = expectDType(scales, DType::F32, "scales"))
    return e;
  if (a.rank() < 1)
    return kernelError("a must have rank >= 1");
  NBitsShape s{attrInt(attrs, "bits", 0), attrInt(attrs, "block_size", 0), a.shape().back(), attrInt(attrs, "n", 0)};
  if (std::string bad = checkNBitsShape(s); !bad.empty())
    return kernelError(bad);
  const bool zp = ins.size() == 4;
  // The operands' domains (u8 codes may arrive as i64) checked as dtypes the layout names.
  const DType zpType = zp ? (ins[3].dtype() == DType::F32 ? DType::F32 : DType::U8) : DType::U8;
  ZeroPointKind kind;
  if (std::string bad = checkNBitsOperands(s, b.dtype() == DType::I64 ? DType::U8 : b.dtype(), b.shape(), DType::F32,
                                           scales.shape(), zp, zpType, zp ? ins[3].shape() : std::vector<int64_t>{},
                                           kind);
      !bad.empty())
    return kernelError(bad);
  std::vector<uint8_t> codeBytes, zpBytes;
  auto codes = bytesOf(b, codeBytes, "b");
  if (!codes)
    return codes.takeError();
  const int64_t level = attrInt(attrs, "accuracy_level", 0);
  if (level < 0 || level > 4)
    return kernelError("accuracy_level " + std::to_string(level) + " is not 0-4");
  NBitsMatrix w;
  w.shape = s;
  w.accuracyLevel = static_cast<int>(level);
  w.codes = *codes;
  w.scales = scales.data<float>();
  w.zeroPoints = kind;
  if (kind == ZeroPointKind::Packed) {
    auto z = bytesOf(ins[3], zpBytes, "zero_points");
    if (!z)
      return z.takeError();
    w.zpPacked = *z;
  } else if (kind == ZeroPointKind::Float) {
    w.zpFloat = ins[3].data<float>();
  }
  std::vector<int64_t> outShape = a.shape();
  outShape.back() = s.N;
  auto y = resultTensor(outs[0], DType::F32, outShape);
  if (!y)
    return y.takeError();
  matmulNBits(a.data<float>(), w, y->data<float>(), a.numElements() / s.K, ctx.pool);
  outs[0] = std::move(*y);
  return Error::success();
}

} // namespace

void addNBitsKernels(KernelTable &t) { t["matmul_nbits"] = matmulNBitsKernel; }

} // namespace genrt::cpu
