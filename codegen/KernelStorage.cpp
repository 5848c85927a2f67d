#include "codegen/KernelStorage.h"

#include "codegen/LaunchCount.h"
#include "passes/analysis/Storage.h"


namespace genc {

std::map<std::string, KernelParamDTypes>
kernelParamDTypes(const Module &m, DType activation,
                  std::map<std::string, std::string> &conflicts) {
  std::map<std::string, KernelParamDTypes> out;
  for (const auto &f : m.functions()) {
    if (isFusedBody(*f))
      continue;
    auto storage = [&](const Value *v) { return storageDType(*f, v, activation); };
    for (const auto &op : f->ops()) {
      if (!op->is("fused"))
        continue;
      std::string body = op->strAttr("body");
      KernelParamDTypes p;
      for (Value *v : op->operands())
        p.inputs.push_back(storage(v));
      for (Value *v : op->results())
        p.outputs.push_back(storage(v));
      if (conflicts.count(body))
        continue;
      auto [it, fresh] = out.emplace(body, p);
      if (!fresh && (it->second.inputs != p.inputs || it->second.outputs != p.outputs)) {
        conflicts[body] = "its call sites store a parameter in different dtypes";
        out.erase(it);
      }
    }
  }
  return out;
}

} // namespace genc
