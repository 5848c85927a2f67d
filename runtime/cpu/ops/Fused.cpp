// `fused` (passes/Fuse.cpp): a group of elementwise/injective/norm ops that a
// GPU runs as one generated kernel. On the CPU the group's body runs op by op
// with the ordinary kernels, so fusion never changes a result here.
#include "runtime/cpu/ops/OpKernels.h"

namespace genrt::cpu {
namespace {

Error fused(KernelContext &ctx, const AttrMap &attrs, const std::vector<Tensor> &ins,
            std::vector<Tensor> &outs) {
  std::string body = attrStr(attrs, "body");
  if (body.empty())
    return kernelError("a fused op needs a 'body' attribute");
  if (!ctx.runBody)
    return kernelError("this executor cannot run fused bodies (body '" + body + "')");
  return ctx.runBody(body, ins, outs);
}

} // namespace

void addFusedKernels(KernelTable &t) { t["fused"] = fused; }

} // namespace genrt::cpu
