// The CUDA driver API opened at run time (CudaApi.h): libcuda.so.1 loaded
// once per process, its entry points resolved, an error named by the call.
#include "runtime/cuda/CudaApi.h"

#include <dlfcn.h>
#include <mutex>

namespace genrt::cuda {
namespace {

struct Loaded {
  DriverApi api;
  Status status = Status::ok();
};

Loaded load() {
  Loaded l;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.status = Status::error("no CUDA driver on this machine (libcuda.so.1 not found)");
    return l;
  }
  // The header maps each name to the versioned symbol whose prototype it
  // declares (cuMemAlloc -> cuMemAlloc_v2): look up exactly that symbol.
  std::string missing;
#define GENC_STR(x) #x
#define GENC_XSTR(x) GENC_STR(x)
#define GENC_RESOLVE(name)                                                                         \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, GENC_XSTR(name)));                \
  if (!l.api.name)                                                                                 \
    missing += std::string(missing.empty() ? "" : ", ") + GENC_XSTR(name);
  GENC_CUDA_DRIVER_FUNCTIONS(GENC_RESOLVE)
#undef GENC_RESOLVE
  if (!missing.empty()) {
    l.status = Status::error("the CUDA driver lacks " + missing + " (needs a driver for CUDA " +
                             std::to_string(CUDA_VERSION / 1000) + "." +
                             std::to_string(CUDA_VERSION % 1000 / 10) + " or newer)");
    return l;
  }
  if (CUresult r = l.api.cuInit(0); r != CUDA_SUCCESS) {
    l.status = Status::error(cuError(l.api, r, "cuInit"));
    return l;
  }
  int n = 0;
  if (l.api.cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0)
    l.status = Status::error("the CUDA driver sees no GPU");
  return l;
}

} // namespace

const DriverApi *driver(Status &err) {
  static const Loaded loaded = load();
  err = loaded.status;
  return loaded.status ? &loaded.api : nullptr;
}

std::string cuError(const DriverApi &api, CUresult r, const std::string &what) {
  const char *s = nullptr;
  if (api.cuGetErrorString)
    api.cuGetErrorString(r, &s);
  return what + " failed: " + (s ? s : "CUDA error " + std::to_string(static_cast<int>(r)));
}

} // namespace genrt::cuda
