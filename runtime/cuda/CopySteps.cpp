// The copy steps: a view op (reshape, squeeze, ...) whose result has a
// buffer of its own copies the bytes; one that shares its source's buffer
// has no step (CudaProgram.cpp), nor do the host-side dims.
#include "runtime/cuda/StepKinds.h"

namespace genrt::cuda {
namespace {

// A view op (reshape, squeeze, ...): the planner gave the result its own
// buffer, so the bytes are copied.
class CopyStep final : public Step {
public:
  CUdeviceptr src = 0, dst = 0;
  Shape shape;
  int64_t elementBytes = 0;
  Status run(StepContext &ctx, const ProgramRun &run) override {
    int64_t n = elementsAt(shape, run.symbols);
    if (n < 0)
      return Status::error(what + ": the result's shape does not evaluate");
    if (n == 0 || src == dst)
      return Status::ok();
    return ctx.dev->check(ctx.dev->api->cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(n * elementBytes), ctx.stream),
                          what.c_str());
  }
};

} // namespace

Status copyStep(const OpInfo &op, const ValueMap &vm, const std::string &where, std::unique_ptr<Step> &out) {
  auto c = std::make_unique<CopyStep>();
  c->src = vm.ptr(op.operands.at(0));
  c->dst = vm.ptr(op.results.at(0));
  c->shape = vm.prog.values[op.results[0]].shape;
  c->elementBytes = static_cast<int64_t>(dtypeSize(vm.stored(op.results[0])));
  if (vm.stored(op.operands[0]) != vm.stored(op.results[0]))
    return Status::error("plan op " + where + ": a view that changes the storage dtype");
  c->kind = "copy";
  out = std::move(c);
  return Status::ok();
}

} // namespace genrt::cuda
