#include "runtime/cpu/FusedBody.h"

namespace genrt::cpu {

Error runFusedBody(const Program &body, const std::vector<Tensor> &weights, KernelContext &ctx,
                   const std::vector<Tensor> &ins, std::vector<Tensor> &outs) {
  if (ins.size() != body.arguments.size() || outs.size() != body.outputs.size())
    return Error::make("fused body '" + body.name + "' called with the wrong arity");
  std::vector<Tensor> vals(body.values.size());
  std::vector<bool> defined(body.values.size(), false);
  for (size_t i = 0; i < ins.size(); ++i) {
    vals[body.arguments[i]] = ins[i];
    defined[body.arguments[i]] = true;
  }
  for (size_t i = 0; i < body.values.size(); ++i)
    if (body.values[i].storage == Storage::Weight) {
      if (body.values[i].index < 0 || static_cast<size_t>(body.values[i].index) >= weights.size())
        return Error::make("fused body '" + body.name + "': weight index out of range");
      vals[i] = weights[body.values[i].index];
      defined[i] = true;
    }
  const std::vector<int64_t> *outerRanks = ctx.resultRanks;
  std::vector<int64_t> ranks;
  ctx.resultRanks = &ranks;
  Error failure;
  for (const OpInfo &op : body.ops) {
    std::vector<Tensor> opIns;
    for (int32_t v : op.operands) {
      if (!defined[v]) {
        failure = Error::make("fused body '" + body.name + "': '" + op.kind +
                              "' reads a value before it is defined");
        break;
      }
      opIns.push_back(vals[v]);
    }
    if (failure)
      break;
    Kernel k = findKernel(op.kind);
    if (!k || op.kind == "fused") {
      failure = Error::make("fused body '" + body.name + "': no CPU kernel for '" + op.kind + "'");
      break;
    }
    ranks.clear();
    for (int32_t r : op.results)
      ranks.push_back(static_cast<int64_t>(body.values[r].shape.size()));
    std::vector<Tensor> opOuts(op.results.size());
    if (Error e = k(ctx, op.attrs, opIns, opOuts)) {
      failure = Error::make("'" + op.kind + "' at \"" + op.loc + "\" in fused body '" + body.name +
                            "': " + e.message());
      break;
    }
    for (size_t i = 0; i < opOuts.size(); ++i) {
      vals[op.results[i]] = std::move(opOuts[i]);
      defined[op.results[i]] = true;
    }
  }
  ctx.resultRanks = outerRanks;
  if (failure)
    return failure;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!defined[body.outputs[i]])
      return Error::make("fused body '" + body.name + "': an output is never computed");
    outs[i] = vals[body.outputs[i]];
  }
  return Error::success();
}

} // namespace genrt::cpu
