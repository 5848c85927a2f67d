#include "runtime/Runtime.h"

#include "runtime/Session.h"
#include "runtime/cpu/CpuExecutor.h"
#include "runtime/cuda/CudaExecutor.h"

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

static std::unique_ptr<Decoder> open(const std::string &planPath, const std::string &device, Status &err,
                                     const ExecutorOptions &opts) {
  std::string name;
  if (!(err = resolveDevice(device, name)))
    return nullptr;
  if (opts.gpus > 1 && name != "cuda") {
    err = Status::error("--gpus " + std::to_string(opts.gpus) + " needs --device cuda (the device here is " + name + ")");
    return nullptr;
  }
  auto plan = std::make_shared<Plan>();
  if (!(err = loadPlan(planPath, *plan)))
    return nullptr;
  for (const ExecutorKind &k : kExecutors)
    if (name == k.name) {
      std::unique_ptr<Executor> exec = k.make(plan, opts, err);
      if (!exec)
        return nullptr;
      return std::make_unique<Session>(std::move(plan), std::move(exec));
    }
  err = Status::error("no executor for device '" + name + "'");
  return nullptr;
}

std::unique_ptr<Decoder> openDecoder(const std::string &planPath, const std::string &device,
                                     Status &err, const ExecutorOptions &opts) {
  std::unique_ptr<Decoder> d;
  err = statusOnOutOfMemory("opening plan '" + planPath + "'", [&] {
    Status s = Status::ok();
    d = open(planPath, device, s, opts);
    return s;
  });
  return err ? std::move(d) : nullptr;
}

} // namespace genrt
