// The weights' upload at load (WeightUpload.h).
#include "runtime/cuda/WeightUpload.h"

#include "runtime/plan/WeightUses.h"
#include "runtime/cuda/GemvAbi.h"

#include <algorithm>

namespace genrt::cuda {

void chooseTransposedWeights(const Plan &p, std::vector<char> &transposed) {
  const std::vector<char> ok = weightsReadOnlyBy(p, [](const OpInfo &op, size_t i) {
    return op.kind == "matmul" && i == 1 && attrInt(op.attrs, "transpose_b", 0) == 0 &&
           !attrStr(op.attrs, "gpu_gemv", "").empty();
  });
  for (size_t w = 0; w < p.weights.size(); ++w) {
    const Tensor &t = p.weights[w];
    size_t es = dtypeSize(t.dtype());
    transposed[w] = ok[w] && t.rank() == 2 && (es == 2 || es == 4) && t.numBytes() > 0;
  }
}

Status uploadWeights(const Device &dev, const KernelModule &mod, const Plan &plan, CUdeviceptr at,
                     std::vector<char> &transposed, std::vector<CUdeviceptr> &ptrs) {
  const DriverApi &a = *dev.api;
  size_t stageBytes = 0;
  for (size_t w = 0; w < plan.weights.size(); ++w)
    if (transposed[w])
      stageBytes = std::max(stageBytes, plan.weights[w].numBytes());
  CUdeviceptr stage = 0;
  CUfunction transpose[2] = {};
  const bool canTranspose = stageBytes && mod.function("genc_transpose_2", transpose[0]) &&
                            mod.function("genc_transpose_4", transpose[1]) &&
                            a.cuMemAlloc(&stage, stageBytes) == CUDA_SUCCESS;
  if (!canTranspose) {
    std::fill(transposed.begin(), transposed.end(), 0);
    stage = 0;
  }
  Status s = Status::ok();
  for (size_t i = 0; i < plan.weights.size() && s; ++i) {
    const Tensor &w = plan.weights[i];
    ptrs.push_back(at);
    if (!w.numBytes()) {
    } else if (!transposed[i]) {
      s = dev.check(a.cuMemcpyHtoD(at, w.rawData(), w.numBytes()), "uploading the weights");
    } else if ((s = dev.check(a.cuMemcpyHtoD(stage, w.rawData(), w.numBytes()), "uploading the weights"))) {
      GencTransposeParams tp{stage, at, w.shape()[0], w.shape()[1]};
      void *args[] = {&tp};
      s = dev.launch(transpose[dtypeSize(w.dtype()) == 2 ? 0 : 1], static_cast<unsigned>((tp.cols + 31) / 32),
                     static_cast<unsigned>((tp.rows + 31) / 32), 1, 32, 8, 0, nullptr, args,
                     "the transpose of a weight for the GEMV kernels");
      if (s)
        s = dev.check(a.cuCtxSynchronize(), "transposing a weight for the GEMV kernels");
    }
    at += (w.numBytes() + 255) / 256 * 256;
  }
  if (stage)
    a.cuMemFree(stage);
  return s;
}

} // namespace genrt::cuda
