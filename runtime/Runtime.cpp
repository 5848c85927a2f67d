#include "runtime/Runtime.h"

#include "runtime/Session.h"
#include "runtime/cpu/CpuExecutor.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/text/PlanTokenizer.h"

namespace genrt {
namespace {

using Factory = std::unique_ptr<Executor> (*)(std::shared_ptr<const Plan>, const ExecutorOptions &, Status &);

// The one registry of executors, in the order `auto` prefers them. Probing
// the CUDA one opens the driver at run time: genrun links no CUDA library.
struct ExecutorKind {
  const char *name;
  Status (*probe)();
  Factory make;
};

Status cpuAlwaysThere() { return Status::ok(); }

const ExecutorKind kExecutors[] = {
    {"cuda", probeCuda, makeCudaExecutor},
    {"cpu", cpuAlwaysThere, makeCpuExecutor},
};

} // namespace

std::vector<DeviceChoice> listDevices() {
  std::vector<DeviceChoice> out;
  for (const ExecutorKind &k : kExecutors) {
    Status s = k.probe();
    out.push_back({k.name, s.isOk(), s.message()});
  }
  return out;
}

Status resolveDevice(const std::string &requested, std::string &device) {
  std::string known;
  for (const ExecutorKind &k : kExecutors) {
    known += std::string(known.empty() ? "" : ", ") + k.name;
    if (requested == "auto") {
      if (k.probe()) {
        device = k.name;
        return Status::ok();
      }
    } else if (requested == k.name) {
      if (Status s = k.probe(); !s)
        return Status::error("--device " + requested + ": " + s.message());
      device = k.name;
      return Status::ok();
    }
  }
  return Status::error("unknown device '" + requested + "' (auto, " + known + ")");
}

static Status open(const std::string &planPath, const std::string &device, OpenedPlan &out,
                   const ExecutorOptions &opts) {
  std::string name;
  if (Status s = resolveDevice(device, name); !s)
    return s;
  if (opts.gpus > 1 && name != "cuda")
    return Status::error("--gpus " + std::to_string(opts.gpus) + " needs --device cuda (the device here is " + name +
                         ")");
  auto plan = std::make_shared<Plan>();
  if (Status s = loadPlan(planPath, *plan); !s)
    return s;
  if (Status s = text::loadPlanTokenizer(*plan, planPath, out.tokenizer); !s)
    return s;
  out.chatTemplates = plan->chatTemplates;
  out.specialTokens = plan->specialTokens;
  for (const ExecutorKind &k : kExecutors)
    if (name == k.name) {
      Status err = Status::ok();
      std::unique_ptr<Executor> exec = k.make(plan, opts, err);
      if (!exec)
        return err;
      out.decoder = std::make_unique<Session>(std::move(plan), std::move(exec));
      return Status::ok();
    }
  return Status::error("no executor for device '" + name + "'");
}

Status openPlan(const std::string &planPath, const std::string &device, OpenedPlan &out,
                const ExecutorOptions &opts) {
  out = OpenedPlan{};
  Status s = statusOnOutOfMemory("opening plan '" + planPath + "'", [&] { return open(planPath, device, out, opts); });
  if (!s)
    out = OpenedPlan{};
  return s;
}

} // namespace genrt
