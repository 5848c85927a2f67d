#include "runtime/Runtime.h"

#include "runtime/Program.h"
#include "runtime/cpu/CpuDecoder.h"

namespace genrt {

std::unique_ptr<Decoder> openDecoder(const std::string &planPath, const std::string &device,
                                     Status &err) {
  if (device != "cpu") {
    err = Status::error("unknown device '" + device + "' (this build supports: cpu)");
    return nullptr;
  }
  Plan plan;
  err = loadPlan(planPath, plan);
  if (!err)
    return nullptr;
  return makeCpuDecoder(std::move(plan), err);
}

} // namespace genrt
