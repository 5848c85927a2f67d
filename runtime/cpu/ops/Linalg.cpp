// Matrix products: matmul (numpy semantics) and gemm (ONNX Gemm), both on
// genrt::cpu::matmul so the CPU executor shares the arithmetic.
#include "runtime/cpu/ops/OpKernels.h"
#include "runtime/plan/Epilogue.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/MatmulBf16.h"
#include "runtime/cpu/MatmulPanels.h"
#include "runtime/cpu/ThreadPool.h"

namespace genrt::cpu {
namespace {

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;

// The epilogue of a linear layer (passes/FuseGemms.cpp), applied in place:
// y[..., N] += bias, then the activation. Same order and functions as the
// separate add / relu / gelu kernels, so folding changes no bit.
// Row by row (no index modulo per element), rows split over the pool: a
// GPT-2 prefill's bias + tanh-GELU over 128 x 3072 outputs per layer took
// longer than its GEMMs when it ran on one thread with `i % N`.
Error applyEpilogue(KernelContext &ctx, const AttrMap &attrs, const Ins &ins, Tensor &y) {
  std::string ep = attrStr(attrs, "epilogue", "");
  Epilogue e;
  if (!parseEpilogue(ep, e))
    return kernelError("unknown epilogue \"" + ep + "\"");
  const bool bias = e.bias;
  const std::string &act = e.activation;
  if (bias != (ins.size() == 3))
    return kernelError(bias ? "epilogue \"" + ep + "\" needs a bias operand"
                            : "a bias operand needs epilogue \"bias...\"");
  const int64_t N = y.rank() ? y.shape().back() : 1;
  const int64_t rows = N ? y.numElements() / N : 0;
  const float *pb = nullptr;
  if (bias) {
    const Tensor &b = ins[2];
    if (auto e = expectDType(b, DType::F32, "bias"))
      return e;
    if (b.rank() != 1 || b.shape()[0] != N)
      return kernelError("bias " + dimsStr(b.shape()) + " does not match the width " +
                         std::to_string(N));
    pb = b.data<float>();
  }
  const int kind = act == "relu" ? 1 : act == "gelu_tanh" ? 2 : 0;
  if (!pb && kind == 0)
    return Error::success();
  float *py = y.data<float>();
  auto body = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float *row = py + r * N;
      if (pb)
        for (int64_t i = 0; i < N; ++i)
          row[i] += pb[i];
      if (kind == 1)
        for (int64_t i = 0; i < N; ++i)
          row[i] = row[i] < 0.f ? 0.f : row[i];
      else if (kind == 2)
        geluTanhRow(row, N);
    }
  };
  // About 16k elements a piece.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1));
  if (ctx.pool)
    ctx.pool->parallelFor(rows, grain, body);
  else
    body(0, rows);
  return Error::success();
}

// a[A..., M, K] · b[B..., K, N] (+ bias[N], activation: `epilogue`)
//   -> y[broadcast(A, B)..., M, N]. A 1-D a is [1, K] and a 1-D b is [K, 1],
// and that dim is dropped from the result.
// a[..., K] · w, w a bf16 [K, N] weight ([N, K] with transpose_b).
Error matmulBf16Kernel(KernelContext &ctx, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &a = ins[0], &b = ins[1];
  const bool tb = attrInt(attrs, "transpose_b", 0) != 0;
  if (a.rank() < 1 || b.rank() != 2)
    return kernelError("a bf16 weight must be 2-D and a of rank >= 1, got " + dimsStr(a.shape()) + " and " +
                       dimsStr(b.shape()));
  const int64_t K = a.shape().back(), N = tb ? b.shape()[0] : b.shape()[1];
  if ((tb ? b.shape()[1] : b.shape()[0]) != K)
    return kernelError("inner dims differ: " + dimsStr(a.shape()) + " · " + dimsStr(b.shape()) +
                       (tb ? " (transpose_b)" : ""));
  std::vector<int64_t> outShape = a.shape();
  outShape.back() = N;
  auto y = resultTensor(outs[0], DType::F32, outShape);
  if (!y)
    return y.takeError();
  if (K == 0)
    std::fill(y->data<float>(), y->data<float>() + y->numElements(), 0.f);
  else
    genrt::cpu::matmulBf16(a.data<float>(), b.data<uint16_t>(), y->data<float>(), a.numElements() / K, N, K, tb,
                           ctx.pool);
  if (auto e = applyEpilogue(ctx, attrs, ins, *y))
    return e;
  outs[0] = std::move(*y);
  return Error::success();
}

Error matmulKernel(KernelContext &ctx, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &a = ins[0], &b = ins[1];
  if (auto e = expectDType(a, DType::F32, "operand 0"))
    return e;
  if (b.dtype() == DType::BF16)
    return matmulBf16Kernel(ctx, attrs, ins, outs);
  if (auto e = expectDType(b, DType::F32, "operand 1"))
    return e;
  if (a.rank() < 1 || b.rank() < 1)
    return kernelError("operands must have rank >= 1, got " + dimsStr(a.shape()) + " and " +
                       dimsStr(b.shape()));
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  // transpose_b: b is a stored [N, K] weight read as [K, N] (a tied embedding
  // as the LM head; cuBLASLt's op(B) = Bᵀ).
  bool tb = attrInt(attrs, "transpose_b", 0) != 0;
  if (tb && b.rank() != 2)
    return kernelError("transpose_b needs a 2-D b, got " + dimsStr(b.shape()));
  if (tb)
    std::swap(bs[0], bs[1]);
  if (a.rank() == 1)
    as.insert(as.begin(), 1);
  if (b.rank() == 1)
    bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    return kernelError("inner dims differ: " + dimsStr(a.shape()) + " · " + dimsStr(b.shape()));
  std::vector<int64_t> batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return kernelError("batch dims do not broadcast: " + dimsStr(a.shape()) + " · " +
                       dimsStr(b.shape()) + " (" + batch.takeError().message() + ")");
  std::vector<int64_t> outShape = *batch;
  if (a.rank() > 1)
    outShape.push_back(M);
  if (b.rank() > 1)
    outShape.push_back(N);
  auto y = resultTensor(outs[0], DType::F32, outShape);
  if (!y)
    return y.takeError();
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float *py = y->data<float>();
  // Panels hold the [K, N] view, transposed at load for transpose_b.
  if (ctx.bPanels && b.rank() == 2 && product(*batch) == product(batchA)) {
    if (!genrt::cpu::matmulPanels(pa, ctx.bPanels, py, product(batchA) * M, N, K, ctx.pool))
      return kernelError("a weight in panels on a CPU without the panel kernels");
  } else if (product(batchB) == 1 && product(*batch) == product(batchA)) {
    // One shared b (x[..., K] · W[K, N]): stack every batch of a into one
    // tall matrix so each panel of W is loaded once.
    genrt::cpu::matmul(pa, pb, py, product(batchA) * M, N, K, tb, ctx.pool);
  } else {
    forEachBroadcast<2>(*batch, {&batchA, &batchB},
                        [&](int64_t o, const std::array<int64_t, 2> &off) {
                          genrt::cpu::matmul(pa + off[0] * M * K, pb + off[1] * K * N,
                                             py + o * M * N, M, N, K);
                        });
  }
  if (auto e = applyEpilogue(ctx, attrs, ins, *y))
    return e;
  outs[0] = std::move(*y);
  return Error::success();
}

// a[M, K] (a[K, M] if trans_a), b[K, N] (b[N, K] if trans_b), c broadcast to [M, N]
//   -> y[M, N] = alpha · a·b + beta · c
Error gemmKernel(KernelContext &, const AttrMap &attrs, const Ins &ins, Outs &outs) {
  const Tensor &a = ins[0], &b = ins[1];
  if (auto e = expectDType(a, DType::F32, "operand 0"))
    return e;
  if (auto e = expectDType(b, DType::F32, "operand 1"))
    return e;
  if (a.rank() != 2 || b.rank() != 2)
    return kernelError("operands must be 2-D, got " + dimsStr(a.shape()) + " and " +
                       dimsStr(b.shape()));
  const bool ta = attrInt(attrs, "trans_a", 0) != 0, tb = attrInt(attrs, "trans_b", 0) != 0;
  const float alpha = static_cast<float>(attrFloat(attrs, "alpha", 1.0));
  const float beta = static_cast<float>(attrFloat(attrs, "beta", 1.0));
  const int64_t M = a.shape()[ta ? 1 : 0], K = a.shape()[ta ? 0 : 1];
  const int64_t N = b.shape()[tb ? 0 : 1], Kb = b.shape()[tb ? 1 : 0];
  if (K != Kb)
    return kernelError("inner dims differ: " + dimsStr(a.shape()) + (ta ? "ᵀ" : "") + " · " +
                       dimsStr(b.shape()) + (tb ? "ᵀ" : ""));
  const float *pa = a.data<float>();
  std::vector<float> at;
  if (ta) { // a[K, M] -> [M, K]
    at.resize(static_cast<size_t>(M * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t m = 0; m < M; ++m)
        at[m * K + k] = pa[k * M + m];
    pa = at.data();
  }
  auto y = newTensor(DType::F32, {M, N});
  if (!y)
    return y.takeError();
  float *py = y->data<float>();
  genrt::cpu::matmul(pa, b.data<float>(), py, M, N, K, tb);
  if (alpha != 1.f)
    for (int64_t i = 0; i < M * N; ++i)
      py[i] *= alpha;
  if (ins.size() > 2) {
    const Tensor &c = ins[2];
    if (auto e = expectDType(c, DType::F32, "operand 2"))
      return e;
    const std::vector<int64_t> mn = {M, N};
    auto bs = broadcastShapes(c.shape(), mn);
    if (!bs || *bs != mn) {
      if (!bs)
        (void)(bs.takeError());
      return kernelError("c of shape " + dimsStr(c.shape()) + " does not broadcast to " +
                         dimsStr(mn));
    }
    const float *pc = c.data<float>();
    forEachBroadcast<1>(mn, {&c.shape()}, [&](int64_t o, const std::array<int64_t, 1> &off) {
      py[o] += beta == 1.f ? pc[off[0]] : beta * pc[off[0]];
    });
  }
  outs[0] = std::move(*y);
  return Error::success();
}

} // namespace

void addLinalgKernels(KernelTable &t) {
  t["matmul"] = matmulKernel;
  t["gemm"] = gemmKernel;
}

} // namespace genrt::cpu
