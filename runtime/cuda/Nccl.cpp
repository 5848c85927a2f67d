// NCCL opened at run time (Nccl.h): the library found once per process, its
// entry points resolved, its version checked.
#include "runtime/cuda/Nccl.h"


#include <cstdlib>
#include <type_traits>
#include <dlfcn.h>

namespace genrt::cuda {
namespace {

struct Loaded {
  NcclApi api;
  Status status = Status::ok();
};

Loaded load(const std::string &library) {
  Loaded l;
  const char *env = library.c_str();
  void *lib = nullptr;
  // GENC_NCCL_LIB, where set, is the only one tried.
  const bool named = env && *env;
  for (const char *name : {named ? env : "libnccl.so.2", named ? "" : "libnccl.so"})
    if (*name && (lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
      l.api.library = name;
      break;
    }
  if (!lib) {
    l.status = Status::error(std::string("more than one GPU needs NCCL: ") +
                             (env && *env ? std::string(env) + " could not be opened"
                                          : "libnccl.so.2 not found (GENC_NCCL_LIB=/path/libnccl.so.2 names it)"));
    return l;
  }
  std::string missing;
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn)
      missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  sym(l.api.getVersion, "ncclGetVersion");
  sym(l.api.getUniqueId, "ncclGetUniqueId");
  sym(l.api.commInitRank, "ncclCommInitRank");
  sym(l.api.commDestroy, "ncclCommDestroy");
  sym(l.api.commAbort, "ncclCommAbort");
  sym(l.api.commGetAsyncError, "ncclCommGetAsyncError");
  sym(l.api.allReduce, "ncclAllReduce");
  sym(l.api.allGather, "ncclAllGather");
  sym(l.api.getErrorString, "ncclGetErrorString");
  if (!missing.empty()) {
    l.status = Status::error(l.api.library + " lacks " + missing);
    return l;
  }
  l.api.getVersion(&l.api.version);
  // ncclCommGetAsyncError and non-blocking aborts as used here: NCCL 2.12+.
  if (l.api.version < 21200)
    l.status = Status::error(l.api.library + " is NCCL " + std::to_string(l.api.version) + "; 2.12 or newer is needed");
  return l;
}

} // namespace

const NcclApi *nccl(const std::string &library, Status &err) {
  static const Loaded loaded = load(library);
  err = loaded.status;
  return loaded.status ? &loaded.api : nullptr;
}

} // namespace genrt::cuda
