#include "runtime/cuda/CudaApi.h"

#include <dlfcn.h>
#include <mutex>

namespace genrt::cuda {
namespace {

// cuGetProcAddress_v2's signature (CUDA 12+), spelled out: cuda.h maps the
// name through macros that depend on the stream-mode defines.
using GetProcAddress = CUresult (*)(const char *, void **, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult *);

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
  auto getProc = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!getProc) {
    l.status = Status::error("the CUDA driver is older than CUDA 12 (no cuGetProcAddress_v2)");
    return l;
  }
  std::string missing;
#define GENC_RESOLVE(name)                                                                         \
  {                                                                                                \
    void *p = nullptr;                                                                             \
    CUdriverProcAddressQueryResult q;                                                              \
    if (getProc(#name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !p)  \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                                 \
    l.api.name = reinterpret_cast<decltype(l.api.name)>(p);                                        \
  }
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
