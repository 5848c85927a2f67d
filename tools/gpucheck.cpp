// gpucheck: every generated kernel of a plan against the CPU kernels, on the GPU.
//
//   gpucheck MODEL.plan... [--tokens=7] [--rows=3] [--seed=1]
//
// For each plan (genc compile, which stores one cubin per --gpu-arch): load
// the cubin for this device with the driver API (cuModuleLoadData /
// cuModuleGetFunction / cuLaunchKernel), run each kernel on random inputs and
// compare with the CPU executor running the same fused body op by op
// (runtime/cpu/FusedBody.h). Runtime only: no compiler, no NVRTC. Prints a table
// (kernel, elements, max abs diff, max rel diff, ok); exit status 1 if any
// kernel is off by 1e-5 or more relative: rel = max|gpu - cpu| / max|cpu| over
// each result (element-wise ratios are meaningless where a LayerNorm output
// is ~0; the table shows them too, as "elem rel", with |cpu| floored at 1e-3).
#include "runtime/Program.h"
#include "runtime/cpu/FusedBody.h"

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>



namespace {

#define CU(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      const char *s_ = nullptr;                                                                    \
      cuGetErrorString(r_, &s_);                                                                   \
      std::fprintf(stderr, "gpucheck: %s failed: %s\n", #call, s_ ? s_ : "?");                     \
      return false;                                                                                \
    }                                                                                              \
  } while (0)

struct Options {
  int64_t tokens = 7, rows = 3;
  unsigned seed = 1;
  double tol = 1e-5;
};

using genrt::Dim;
using genrt::DType;
using genrt::Shape;
using genrt::Tensor;

int64_t evalDim(const Dim &d, const std::map<std::string, int64_t> &env) {
  auto v = d.evaluate(env);
  return v ? *v : -1;
}

std::vector<int64_t> evalShape(const Shape &s, const std::map<std::string, int64_t> &env) {
  std::vector<int64_t> out;
  for (const Dim &d : s)
    out.push_back(evalDim(d, env));
  return out;
}

Tensor randomTensor(DType dt, const std::vector<int64_t> &shape, std::mt19937 &rng,
                    int64_t maxIndex) {
  Tensor t(dt, shape);
  int64_t n = t.numElements();
  if (dt == DType::F32) {
    std::normal_distribution<float> g(0.f, 1.f);
    for (int64_t i = 0; i < n; ++i)
      t.data<float>()[i] = g(rng);
  } else if (dt == DType::I64) {
    std::uniform_int_distribution<int64_t> u(0, maxIndex - 1);
    for (int64_t i = 0; i < n; ++i)
      t.data<int64_t>()[i] = u(rng);
  } else if (dt == DType::Bool) {
    std::uniform_int_distribution<int> u(0, 1);
    for (int64_t i = 0; i < n; ++i)
      t.data<uint8_t>()[i] = static_cast<uint8_t>(u(rng));
  }
  return t;
}

struct Row {
  std::string kernel, status;
  int64_t elements = 0;
  double maxAbs = 0, maxRel = 0, maxElemRel = 0;
  bool ok = false;
};

bool runKernel(const genrt::Plan &plan, const genrt::KernelInfo &k, CUmodule mod, const Options &o,
               std::mt19937 &rng, Row &row) {
  const genrt::Program &body = plan.functions.at(k.name);
  std::map<std::string, int64_t> env;
  std::set<std::string> syms(k.symbols.begin(), k.symbols.end());
  for (const auto &v : body.values)
    for (const Dim &d : v.shape)
      for (const auto &s : d.symbols())
        syms.insert(s);
  for (const auto &s : syms)
    env[s] = s == "tokens" ? o.tokens : s == "rows" ? o.rows : 5;
  // Indices stay below the smallest symbol (rows gathers index tokens).
  int64_t maxIndex = std::min(o.tokens, o.rows);
  std::vector<Tensor> ins;
  for (int32_t a : body.arguments) {
    const genrt::ValueInfo &v = body.values[a];
    if (v.dtype != DType::F32 && v.dtype != DType::I64 && v.dtype != DType::Bool) {
      row.status = "input dtype " + std::string(genrt::dtypeName(v.dtype));
      return true;
    }
    ins.push_back(randomTensor(v.dtype, evalShape(v.shape, env), rng, maxIndex));
  }
  genrt::cpu::KernelContext ctx;
  ctx.symbols = &env;
  std::vector<Tensor> ref(body.outputs.size());
  if (genrt::cpu::Error e = genrt::cpu::runFusedBody(body, plan.weights, ctx, ins, ref)) {
    row.status = "cpu: " + e.message();
    return true;
  }
  CUfunction fn;
  CU(cuModuleGetFunction(&fn, mod, k.name.c_str()));
  std::vector<CUdeviceptr> bufs;
  std::vector<long long> symVals;
  for (const auto &s : k.symbols)
    symVals.push_back(env[s]);
  for (const Tensor &t : ins) {
    CUdeviceptr p = 0;
    CU(cuMemAlloc(&p, std::max<size_t>(t.numBytes(), 4)));
    if (t.numBytes())
      CU(cuMemcpyHtoD(p, t.rawData(), t.numBytes()));
    bufs.push_back(p);
  }
  std::vector<Tensor> gpuOut;
  for (int32_t r : body.outputs) {
    const genrt::ValueInfo &v = body.values[r];
    Tensor t(v.dtype, evalShape(v.shape, env));
    CUdeviceptr d = 0;
    CU(cuMemAlloc(&d, std::max<size_t>(t.numBytes(), 4)));
    CU(cuMemsetD8(d, 0xff, std::max<size_t>(t.numBytes(), 4))); // NaN: unwritten shows
    bufs.push_back(d);
    gpuOut.push_back(std::move(t));
  }
  std::vector<void *> args;
  for (auto &s : symVals)
    args.push_back(&s);
  for (auto &b : bufs)
    args.push_back(&b);
  int64_t work = std::max<int64_t>(1, evalDim(k.work, env));
  unsigned block = static_cast<unsigned>(k.blockSize);
  unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      65535, k.mode == "rows" ? work : (work + block - 1) / block));
  unsigned shared = static_cast<unsigned>(std::max<int64_t>(0, evalDim(k.sharedFloats, env)) * 4);
  if (shared > 48 * 1024)
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared));
  CU(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, nullptr, args.data(), nullptr));
  CU(cuCtxSynchronize());
  for (size_t i = 0; i < gpuOut.size(); ++i) {
    Tensor &g = gpuOut[i];
    if (g.numBytes())
      CU(cuMemcpyDtoH(g.data<char>(), bufs[ins.size() + i], g.numBytes()));
    const Tensor &c = ref[i];
    if (c.numElements() != g.numElements() || c.dtype() != g.dtype()) {
      row.status = "result " + std::to_string(i) + ": size or dtype differs";
      return true;
    }
    row.elements += g.numElements();
    double maxRef = 0, maxDiff = 0;
    for (int64_t e = 0; e < g.numElements(); ++e) {
      double gv, cv;
      if (g.dtype() == DType::F32) {
        gv = g.data<float>()[e];
        cv = c.data<float>()[e];
      } else if (g.dtype() == DType::I64) {
        gv = static_cast<double>(g.data<int64_t>()[e]);
        cv = static_cast<double>(c.data<int64_t>()[e]);
      } else {
        gv = g.data<uint8_t>()[e] != 0;
        cv = c.data<uint8_t>()[e] != 0;
      }
      double d = std::fabs(gv - cv);
      if (std::isnan(gv) != std::isnan(cv))
        d = INFINITY;
      else if (std::isnan(gv))
        d = 0;
      row.maxAbs = std::max(row.maxAbs, d);
      maxDiff = std::max(maxDiff, d);
      if (!std::isnan(cv))
        maxRef = std::max(maxRef, std::fabs(cv));
      row.maxElemRel = std::max(row.maxElemRel, d / std::max(std::fabs(cv), 1e-3));
    }
    row.maxRel = std::max(row.maxRel, maxDiff == 0 ? 0 : maxDiff / std::max(maxRef, 1e-30));
  }
  for (CUdeviceptr b : bufs)
    cuMemFree(b);
  row.ok = row.maxRel < o.tol;
  row.status = row.ok ? "ok" : "MISMATCH";
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tokens=", 0) == 0)
      o.tokens = std::atoll(a.c_str() + 9);
    else if (a.rfind("--rows=", 0) == 0)
      o.rows = std::atoll(a.c_str() + 7);
    else if (a.rfind("--seed=", 0) == 0)
      o.seed = static_cast<unsigned>(std::atoll(a.c_str() + 7));
    else if (a == "-h" || a == "--help") {
      std::printf("usage: gpucheck MODEL.plan... [--tokens=7] [--rows=3] [--seed=1]\n");
      return 0;
    } else
      models.push_back(a);
  }
  if (models.empty()) {
    std::fprintf(stderr, "gpucheck: error: give one or more plans (genc compile ... -o MODEL.plan)\n");
    return 2;
  }
  if (cuInit(0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "gpucheck: error: no CUDA device (cuInit failed)\n");
    return 2;
  }
  CUdevice dev;
  CUcontext ctx;
  char devName[256] = {0};
  int major = 0, minor = 0;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "gpucheck: error: cannot open device 0\n");
    return 2;
  }
  cuDeviceGetName(devName, sizeof devName, dev);
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  std::printf("device: %s (sm_%d%d); tokens = %lld, rows = %lld\n"
              "rel = max|gpu-cpu| / max|cpu| per result; elem rel = max(|gpu-cpu| / max(|cpu|, 1e-3))\n",
              devName, major, minor, static_cast<long long>(o.tokens), static_cast<long long>(o.rows));
  std::mt19937 rng(o.seed);
  int bad = 0, checked = 0, skipped = 0;
  std::string sm = "sm_" + std::to_string(major * 10 + minor);
  for (const std::string &path : models) {
    genrt::Plan plan;
    if (genrt::Status st = genrt::loadPlan(path, plan); !st) {
      std::fprintf(stderr, "gpucheck: %s\n", st.message().c_str());
      return 2;
    }
    const genrt::KernelCode *cubin = nullptr;
    for (const auto &c : plan.cubins)
      if (c.arch == sm)
        cubin = &c;
    std::set<std::string> withKernel;
    for (const auto &k : plan.kernels)
      withKernel.insert(k.name);
    std::printf("\n%s: %zu kernels, %zu fused bodies without one\n", path.c_str(), plan.kernels.size(),
                plan.functions.size() - withKernel.size());
    if (!cubin) {
      std::fprintf(stderr, "gpucheck: %s has no cubin for %s (genc compile --gpu-arch=%s)\n",
                   path.c_str(), sm.c_str(), sm.c_str());
      return 2;
    }
    CUmodule mod;
    if (cuModuleLoadData(&mod, cubin->data) != CUDA_SUCCESS) {
      std::fprintf(stderr, "gpucheck: %s: the %s cubin does not load\n", path.c_str(), sm.c_str());
      return 2;
    }
    std::printf("  %-26s %10s %12s %12s %12s  %s\n", "kernel", "elements", "max abs", "max rel",
                "elem rel", "ok");
    for (const genrt::KernelInfo &k : plan.kernels) {
      Row row;
      row.kernel = k.name;
      if (!runKernel(plan, k, mod, o, rng, row))
        row.status = "cuda error";
      ++checked;
      bad += !row.ok;
      std::printf("  %-26s %10lld %12.3g %12.3g %12.3g  %s\n", row.kernel.c_str(),
                  static_cast<long long>(row.elements), row.maxAbs, row.maxRel, row.maxElemRel,
                  row.status.c_str());
    }
    for (const auto &[name, f] : plan.functions)
      if (!withKernel.count(name)) {
        ++skipped;
        std::printf("  %-26s  no kernel (runs on the CPU executor)\n", name.c_str());
      }
    cuModuleUnload(mod);
  }
  std::printf("\n%d kernels checked, %d off, %d bodies without a kernel\n", checked, bad, skipped);
  return bad ? 1 : 0;
}
