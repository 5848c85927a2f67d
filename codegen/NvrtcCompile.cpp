#include "codegen/NvrtcCompile.h"
#include "compiler/remarks/Progress.h"
#include "runtime/Env.h"

#include <dlfcn.h>
#include <future>
#include <sys/stat.h>

#ifdef GENC_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace genc {

static llvm::Error error(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool haveNvrtc() {
#ifdef GENC_HAVE_NVRTC
  return true;
#else
  return false;
#endif
}

std::string checkGpuArchName(const std::string &a) {
  bool ok = a.size() > 3 && a.compare(0, 3, "sm_") == 0 && a.size() <= 6;
  for (size_t i = 3; ok && i < a.size(); ++i)
    ok = a[i] >= '0' && a[i] <= '9';
  return ok ? "" : "'" + a + "' is not an architecture (expected sm_XX, e.g. sm_80)";
}

llvm::Expected<std::vector<int>> parseGpuArchs(const std::vector<std::string> &archs) {
  std::vector<int> out;
  for (const std::string &a : archs) {
    if (std::string why = checkGpuArchName(a); !why.empty())
      return error("--gpu-arch: " + why);
    out.push_back(std::stoi(a.substr(3)));
  }
  if (out.empty())
    return error("--gpu-arch: no architecture given");
  return out;
}

#ifdef GENC_HAVE_NVRTC
// Every run's options besides -arch. --fmad=false: no contraction of a*b+c,
// so the kernels round like the CPU executor (fp32 parity < 1e-5 without
// luck).
static const char *const kNvrtcOptions[] = {"--fmad=false", "-default-device"};
// GENC_NVRTC_LINEINFO=1: source lines in the cubin, for compute-sanitizer's
// and Nsight's reports (the line of the module's source: --emit=cuda's
// without the banner line it writes before each kernel).
static bool nvrtcLineInfo() { return genrt::env::is("GENC_NVRTC_LINEINFO", "1"); }

// One NVRTC run of `source` (kernel `what`) with -arch=`arch`: the cubin
// (real architectures) and the PTX.
struct NvrtcOut {
  std::string cubin, ptx;
};
static llvm::Expected<NvrtcOut> runNvrtc(const std::string &source, const std::string &what,
                                         const std::string &arch) {
  nvrtcProgram prog;
  if (nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), (what + ".cu").c_str(), 0,
                                         nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return error("NVRTC cannot create a program for kernel '" + what + "': " + nvrtcGetErrorString(r));
  std::string archOpt = "-arch=" + arch;
  const char *opts[] = {archOpt.c_str(), kNvrtcOptions[0], kNvrtcOptions[1], "-lineinfo"};
  nvrtcResult r = nvrtcCompileProgram(prog, nvrtcLineInfo() ? 4 : 3, opts);
  std::string log;
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.resize(logSize);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(logSize - 1);
  }
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return error("NVRTC failed to compile kernel '" + what + "' for " + arch + ": " +
                 nvrtcGetErrorString(r) + (log.empty() ? std::string() : "\n" + log));
  }
  NvrtcOut out;
  size_t n = 0;
  nvrtcResult g = nvrtcGetCUBINSize(prog, &n);
  if (g == NVRTC_SUCCESS) {
    out.cubin.resize(n);
    g = nvrtcGetCUBIN(prog, out.cubin.data());
  }
  if (g == NVRTC_SUCCESS && (g = nvrtcGetPTXSize(prog, &n)) == NVRTC_SUCCESS) {
    out.ptx.resize(n);
    g = nvrtcGetPTX(prog, out.ptx.data());
  }
  nvrtcDestroyProgram(&prog);
  if (g != NVRTC_SUCCESS)
    return error("NVRTC gave no code for kernel '" + what + "' (" + arch + "): " + nvrtcGetErrorString(g));
  if (!out.ptx.empty() && out.ptx.back() == '\0')
    out.ptx.pop_back();
  return out;
}
#endif

std::string nvrtcIdentity() {
#ifdef GENC_HAVE_NVRTC
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::string id = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
  Dl_info info{};
  struct stat st{};
  if (dladdr(reinterpret_cast<void *>(&nvrtcCompileProgram), &info) && info.dli_fname &&
      stat(info.dli_fname, &st) == 0)
    id += std::string(" ") + info.dli_fname + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime);
  return id;
#else
  return "no nvrtc";
#endif
}

llvm::Expected<CompiledKernel> compileKernel(const CudaKernel &k, const std::vector<int> &archs) {
#ifdef GENC_HAVE_NVRTC
  CompiledKernel ck;
  ck.name = k.name;
  for (int a : archs) {
    std::string sm = "sm_" + std::to_string(a), cc = "compute_" + std::to_string(a);
    auto out = runNvrtc(k.source, k.name, sm);
    if (!out)
      return out.takeError();
    ck.cubins.push_back({sm, std::move(out->cubin)});
    ck.ptx.push_back({cc, std::move(out->ptx)});
  }
  return ck;
#else
  return error("cannot compile kernel '" + k.name + "': genc was built without CUDA (NVRTC)");
#endif
}

llvm::Expected<CompiledModule> compileModule(const CudaModule &cm, const std::vector<int> &archs,
                                             const KernelCache &cache) {
#ifdef GENC_HAVE_NVRTC
  CompiledModule out;
  if (cm.kernels.empty() && cm.attentionKernels.empty() && cm.gemvKernels.empty())
    return out; // the token kernels alone do not make a module worth loading
  std::string source = cudaModuleSource(cm);
  const std::string &first = !cm.kernels.empty()           ? cm.kernels.front().name
                             : !cm.attentionKernels.empty() ? cm.attentionKernels.front()
                                                            : cm.gemvKernels.front();
  // One NVRTC run compiles every kernel for an architecture, the
  // architectures at once (NVRTC programs are independent; the 1.1B Llama's
  // module took 12 s for sm_80 then sm_90). Progress stays on this thread:
  // the line names the architectures not yet collected (in order), the count
  // moves as each is.
  const uint64_t perArch =
      cm.kernels.size() + cm.attentionKernels.size() + cm.gemvKernels.size() + cm.tokenKernels.size();
  auto compileFor = [&](int a) -> llvm::Expected<NvrtcOut> {
    std::string sm = "sm_" + std::to_string(a);
    auto r = runNvrtc(source, first, sm);
    if (!r) {
      llvm::consumeError(r.takeError());
      for (const CudaKernel &k : cm.kernels) // find the kernel at fault
        if (auto one = runNvrtc(k.source, k.name, sm); !one)
          return one.takeError();
      r = runNvrtc(source, "the whole module", sm);
    }
    return r;
  };
  // The cache first: an architecture found there needs no NVRTC run.
  const std::string identity = nvrtcIdentity();
  std::vector<std::string> keys;
  std::vector<std::optional<CachedCode>> cached;
  for (int a : archs) {
    std::vector<std::string> parts = {"genc kernel cache 1", identity, "sm_" + std::to_string(a)};
    parts.insert(parts.end(), std::begin(kNvrtcOptions), std::end(kNvrtcOptions));
    if (nvrtcLineInfo())
      parts.push_back("-lineinfo");
    parts.push_back(source);
    keys.push_back(KernelCache::keyOf(parts));
    cached.push_back(cache.load(keys.back()));
  }
  std::vector<std::future<llvm::Expected<NvrtcOut>>> runs;
  for (size_t i = 0; i < archs.size(); ++i)
    runs.push_back(cached[i] ? std::future<llvm::Expected<NvrtcOut>>()
                             : std::async(std::launch::async, compileFor, archs[i]));
  auto pending = [&](size_t from) {
    std::string names;
    for (size_t i = from < archs.size() ? from : 0; i < archs.size(); ++i)
      names += (names.empty() ? "sm_" : ",sm_") + std::to_string(archs[i]);
    return "nvrtc " + names + ": kernels";
  };
  progress::update(pending(0), 0, archs.size() * perArch, /*bytes=*/false);
  llvm::Error failed = llvm::Error::success();
  for (size_t i = 0; i < archs.size(); ++i) {
    NvrtcOut code;
    if (cached[i]) {
      code.cubin = std::move(cached[i]->cubin);
      code.ptx = std::move(cached[i]->ptx);
      ++out.fromCache;
    } else {
      auto r = runs[i].get(); // every run is collected, failed or not
      if (!r) {
        if (!failed)
          failed = r.takeError();
        else
          llvm::consumeError(r.takeError());
        continue;
      }
      code = std::move(*r);
      cache.store(keys[i], {code.cubin, code.ptx});
    }
    out.cubins.push_back({"sm_" + std::to_string(archs[i]), std::move(code.cubin)});
    out.ptx.push_back({"compute_" + std::to_string(archs[i]), std::move(code.ptx)});
    progress::update(pending(i + 1), (i + 1) * perArch, archs.size() * perArch, /*bytes=*/false);
  }
  if (failed)
    return std::move(failed);
  return out;
#else
  return error("cannot compile kernels: genc was built without CUDA (NVRTC)");
#endif
}

} // namespace genc
