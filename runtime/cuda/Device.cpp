// A GPU opened through the driver API, the launch of genc's kernels (with
// dependent launch on sm_90 and newer), and the plan's kernel module
// (Device.h).
#include "runtime/cuda/Device.h"


#include <algorithm>
#include <cstdlib>

namespace genrt::cuda {

Status Device::open(int ordinal, Device &out) {
  Status err = Status::ok();
  out = Device();
  out.api = driver(err);
  if (!out.api)
    return err;
  const DriverApi &a = *out.api;
  int count = 0;
  if (Status s = out.check(a.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s)
    return s;
  if (ordinal < 0 || ordinal >= count)
    return Status::error("no GPU " + std::to_string(ordinal) + " (this machine has " +
                         std::to_string(count) + ")");
  Status s = out.check(a.cuDeviceGet(&out.dev, ordinal), "cuDeviceGet");
  if (s)
    s = out.check(a.cuDevicePrimaryCtxRetain(&out.ctx, out.dev), "cuDevicePrimaryCtxRetain");
  if (s)
    s = out.check(a.cuCtxSetCurrent(out.ctx), "cuCtxSetCurrent");
  if (!s)
    return s;
  char name[256] = {0};
  a.cuDeviceGetName(name, sizeof name, out.dev);
  out.name = name;
  a.cuDeviceGetAttribute(&out.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, out.dev);
  a.cuDeviceGetAttribute(&out.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, out.dev);
  a.cuDeviceGetAttribute(&out.smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, out.dev);
  a.cuDeviceGetAttribute(&out.maxSharedPerBlock,
                         CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, out.dev);
  int memKhz = 0, busBits = 0;
  a.cuDeviceGetAttribute(&memKhz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, out.dev);
  a.cuDeviceGetAttribute(&busBits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, out.dev);
  out.memoryBytesPerUs = 2.0 * memKhz * 1e3 * (busBits / 8.0) / 1e6;
  size_t freeB = 0, totalB = 0;
  if (Status m = out.check(a.cuMemGetInfo(&freeB, &totalB), "cuMemGetInfo"); !m)
    return m;
  out.freeBytes = static_cast<int64_t>(freeB);
  out.totalBytes = static_cast<int64_t>(totalB);
  out.pdl = out.major >= 9;
  return Status::ok();
}

Status Device::launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                      unsigned shared, CUstream stream, void **args, const std::string &what) const {
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = gx;
  cfg.gridDimY = gy;
  cfg.gridDimZ = gz;
  cfg.blockDimX = bx;
  cfg.blockDimY = by;
  cfg.blockDimZ = 1;
  cfg.sharedMemBytes = shared;
  cfg.hStream = stream;
  cfg.attrs = pdl ? &attr : nullptr;
  cfg.numAttrs = pdl ? 1 : 0;
  return check(api->cuLaunchKernelEx(&cfg, fn, args, nullptr), ("launching " + what).c_str());
}

void Device::close() {
  if (api && ctx)
    api->cuDevicePrimaryCtxRelease(dev);
  ctx = nullptr;
}

namespace {

int archNumber(const std::string &arch, size_t prefix) { return std::atoi(arch.c_str() + prefix); }

} // namespace

Status KernelModule::load(const Device &dev, const Plan &plan) {
  api_ = dev.api;
  if (plan.kernels.empty() && plan.cubins.empty() && plan.ptx.empty())
    return Status::ok(); // a plan compiled without NVRTC has no kernels to load
  const int want = dev.arch();
  // A cubin runs on its own major at an equal or newer minor.
  const KernelCode *code = nullptr;
  int best = -1;
  for (const KernelCode &c : plan.cubins) {
    int a = archNumber(c.arch, 3);
    if (a / 10 == want / 10 && a <= want && a > best)
      best = a, code = &c;
  }
  bool jit = false;
  if (!code) {
    for (const KernelCode &c : plan.ptx) {
      int a = archNumber(c.arch, 8);
      if (a <= want && a > best)
        best = a, code = &c, jit = true;
    }
  }
  if (!code) {
    std::string have;
    for (const auto *list : {&plan.cubins, &plan.ptx})
      for (const KernelCode &c : *list)
        have += (have.empty() ? "" : ", ") + c.arch;
    return Status::error("the plan's kernels were built for " + (have.empty() ? "no GPU" : have) +
                         ", none of which runs on this " + dev.name + " (sm_" +
                         std::to_string(want) + "); recompile with genc --gpu-arch=sm_" +
                         std::to_string(want));
  }
  // PTX must be NUL-terminated for the JIT; the plan stores it as written.
  std::string ptx;
  const void *image = code->data;
  if (jit) {
    ptx.assign(reinterpret_cast<const char *>(code->data), code->bytes);
    image = ptx.c_str();
  }
  if (Status s = dev.check(api_->cuModuleLoadData(&mod_, image),
                           jit ? "loading the plan's PTX (driver JIT)" : "loading the plan's cubin");
      !s)
    return s;
  source_ = jit ? "PTX " + code->arch + " (JIT)" : "cubin " + code->arch;
  return Status::ok();
}

void KernelModule::unload() {
  if (api_ && mod_)
    api_->cuModuleUnload(mod_);
  mod_ = nullptr;
}

Status KernelModule::function(const std::string &name, CUfunction &out) const {
  if (!mod_)
    return Status::error("kernel '" + name + "': the plan has no GPU code");
  CUresult r = api_->cuModuleGetFunction(&out, mod_, name.c_str());
  return r == CUDA_SUCCESS ? Status::ok() : Status::error(cuError(*api_, r, "kernel '" + name + "'"));
}

CUdeviceptr KernelModule::global(const std::string &name, size_t &bytes) const {
  CUdeviceptr at = 0;
  bytes = 0;
  if (!mod_ || api_->cuModuleGetGlobal(&at, &bytes, mod_, name.c_str()) != CUDA_SUCCESS)
    return 0;
  return at;
}

Status FusedLaunch::prepare(const Device &dev, const KernelModule &mod, const KernelInfo &info) {
  info_ = &info;
  return mod.function(info.name, fn_);
}

Status FusedLaunch::launch(const Device &dev, const std::map<std::string, int64_t> &symbols,
                           const std::vector<CUdeviceptr> &pointers, CUstream stream) const {
  const KernelInfo &k = *info_;
  if (pointers.size() != static_cast<size_t>(k.numInputs + k.numOutputs))
    return Status::error("kernel '" + k.name + "': wrong number of buffers");
  std::vector<long long> symVals;
  for (const std::string &s : k.symbols) {
    auto it = symbols.find(s);
    if (it == symbols.end())
      return Status::error("kernel '" + k.name + "' needs the symbol '" + s + "'");
    symVals.push_back(it->second);
  }
  std::vector<void *> args;
  for (long long &s : symVals)
    args.push_back(&s);
  std::vector<CUdeviceptr> ptrs = pointers;
  for (CUdeviceptr &p : ptrs)
    args.push_back(&p);
  auto work = k.work.evaluate(symbols), shared = k.sharedFloats.evaluate(symbols);
  if (!work || !shared || *work < 0 || *shared < 0)
    return Status::error("kernel '" + k.name + "': its launch size does not evaluate");
  if (*work == 0)
    return Status::ok();
  const int64_t block = k.blockSize;
  // Elementwise kernels are grid-stride loops; a row kernel takes one block
  // per row and strides over rows past the grid limit.
  int64_t grid = std::min<int64_t>(65535, k.mode == "rows" ? *work : (*work + block - 1) / block);
  int64_t sharedBytes = *shared * 4;
  if (sharedBytes > dev.maxSharedPerBlock)
    return Status::error("kernel '" + k.name + "' needs " + std::to_string(sharedBytes) +
                         " bytes of shared memory, the device allows " +
                         std::to_string(dev.maxSharedPerBlock));
  if (sharedBytes > 48 * 1024 && sharedBytes > sharedLimitSet_) {
    if (Status s = dev.check(dev.api->cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                         static_cast<int>(sharedBytes)),
                             "cuFuncSetAttribute");
        !s)
      return s;
    sharedLimitSet_ = static_cast<int>(sharedBytes);
  }
  return dev.launch(fn_, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1,
                    static_cast<unsigned>(sharedBytes), stream, args.data(), "kernel '" + k.name + "'");
}

} // namespace genrt::cuda
