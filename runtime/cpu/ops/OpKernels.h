// The CPU kernels (shared by the runtime's executor and the compiler's interpreter), one function per op kind, grouped by family
// (Elementwise.cpp, Movement.cpp, Reductions.cpp, Linalg.cpp, ShapeOps.cpp),
// and the helpers they share.
//
// Value domain: every tensor a kernel sees is f32, i64 or bool. Narrower or
// wider types (f16/bf16/f64 weights, i32 constants, ...) are converted when
// they enter the interpreter, so each kernel is written once per domain type.
// Kernels never assume the op's declared result types are right: shapes are
// recomputed from the operands, and every shape or index coming from data is
// checked, so a bad graph gives an error instead of a crash.
#pragma once
#include "runtime/cpu/OpLibrary.h"

#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace genrt::cpu {

using KernelTable = std::unordered_map<std::string, Kernel>;

void addElementwiseKernels(KernelTable &t);
void addMovementKernels(KernelTable &t);
void addReductionKernels(KernelTable &t);
void addLinalgKernels(KernelTable &t);
void addNBitsKernels(KernelTable &t);     // NBitsLinalg.cpp: matmul_nbits
void addShapeKernels(KernelTable &t);
void addAttentionKernels(KernelTable &t); // Attention.cpp: the raised `attention` op
void addFusedKernels(KernelTable &t);     // Fused.cpp: `fused` groups run their body
/// All kernels, built once.
const KernelTable &kernelTable();

// ---- helpers ---------------------------------------------------------------

Error kernelError(const std::string &msg);

/// "[2, 3]"
std::string dimsStr(const std::vector<int64_t> &shape);
/// f32 / i64 / bool: the type a value of dtype `t` has inside the interpreter.
DType domainOf(DType t);
/// The same values in the domain type (shares the bytes when already there).
Tensor toDomain(const Tensor &t);

/// Largest tensor the interpreter allocates; a bigger shape is taken for a
/// bug in the graph rather than tried (and failed) as an allocation.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 36;
/// Element count of `shape`; an error for negative dims or an absurd size.
Expected<int64_t> checkedNumElements(const std::vector<int64_t> &shape, DType dt);
/// A zero-filled tensor after checkedNumElements.
Expected<Tensor> newTensor(DType dt, std::vector<int64_t> shape);
/// The result buffer the executor preset in `preset` (its planned arena
/// buffer) when dtype and shape match, so the kernel writes in place; else a
/// new zero-filled tensor. Its contents are not zeroed: the kernel writes all.
Expected<Tensor> resultTensor(Tensor &preset, DType dt, std::vector<int64_t> shape);

/// axis in [-rank, rank) -> [0, rank); `rank` is rank+1 for insert positions.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank);
/// Numpy broadcast of two shapes.
Expected<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t> &a,
                                                     const std::vector<int64_t> &b);
/// Elements of a rank-0 or rank-1 integer tensor (shape, axes, starts, ...).
Expected<std::vector<int64_t>> intList(const Tensor &t, const char *what);
/// The one element of a rank-0 or single-element tensor, as int64 / float.
Expected<int64_t> intScalar(const Tensor &t, const char *what);
Expected<float> floatScalar(const Tensor &t, const char *what);
/// Row-major strides (in elements).
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);
int64_t product(const std::vector<int64_t> &shape, size_t from = 0, size_t to = SIZE_MAX);
/// An error unless t has dtype `want` (named as the operand `what`).
Error expectDType(const Tensor &t, DType want, const char *what);

/// Strides of `in` read as if broadcast to `out` (0 along broadcast dims),
/// aligned to out's rank. Assumes the shapes are broadcast-compatible.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out);

/// Calls f(o, offs) for each element o of a tensor of shape `out`, where
/// offs[i] is the element offset into input i of shape *ins[i] broadcast to
/// `out`. The innermost dim runs as a plain loop.
template <size_t N, typename F>
void forEachBroadcast(const std::vector<int64_t> &out,
                      const std::array<const std::vector<int64_t> *, N> &ins, F &&f) {
  const int64_t total = product(out);
  if (total == 0)
    return;
  bool same = true;
  for (size_t i = 0; i < N; ++i)
    same &= *ins[i] == out;
  std::array<int64_t, N> off{};
  if (same) { // the common case: no broadcasting at all
    for (int64_t o = 0; o < total; ++o) {
      off.fill(o);
      f(o, off);
    }
    return;
  }
  const size_t R = out.size();
  if (R == 0) {
    f(0, off);
    return;
  }
  std::array<std::vector<int64_t>, N> st;
  std::array<int64_t, N> innerStride{};
  for (size_t i = 0; i < N; ++i) {
    st[i] = broadcastStrides(*ins[i], out);
    innerStride[i] = st[i][R - 1];
  }
  const int64_t inner = out[R - 1];
  std::vector<int64_t> idx(R, 0);
  std::array<int64_t, N> base{};
  for (int64_t o = 0; o < total; o += inner) {
    off = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(o + j, off);
      for (size_t i = 0; i < N; ++i)
        off[i] += innerStride[i];
    }
    for (int64_t d = static_cast<int64_t>(R) - 2; d >= 0; --d) { // odometer over outer dims
      ++idx[d];
      for (size_t i = 0; i < N; ++i)
        base[i] += st[i][d];
      if (idx[d] < out[d])
        break;
      for (size_t i = 0; i < N; ++i)
        base[i] -= st[i][d] * out[d];
      idx[d] = 0;
    }
  }
}

} // namespace genrt::cpu
