// gpucheck: every generated kernel of a plan against the CPU kernels, on the GPU.
//
//   gpucheck MODEL.plan... [--tokens=7] [--rows=3] [--seed=1]
//
// For each plan (genc compile, which stores one cubin per --gpu-arch): load
// its kernels for this device and launch each one on random inputs through
// the CUDA executor's own launch code (runtime/cuda/Device.h), and compare
// with the CPU executor running the same fused body op by op
// (runtime/cpu/FusedBody.h). Runtime only: no compiler, no NVRTC, and the
// driver is opened at run time like genrun does. Prints a table
// (kernel, elements, max abs diff, max rel diff, ok); exit status 1 if any
// result is off: rel = max|gpu - cpu| / max|cpu| over each result
// (element-wise ratios are meaningless where a LayerNorm output is ~0; the
// table shows them too, as "elem rel", with |cpu| floored at 1e-3).
//
// Storage dtypes (genc compile --dtype f16|bf16): a parameter the kernel
// takes as f16/bf16 gets random values rounded to that type, and the CPU
// executor (f32) runs on exactly those rounded values, so inputs agree bit
// for bit. Both sides then compute in fp32; the GPU rounds each result once,
// to its storage type. A result stored as f32 must agree to 1e-5; one stored
// as f16/bf16 is off by at most half an ulp of the type at max|cpu| (2^-11 /
// 2^-8 relative) plus the fp32 difference, so it must agree to one ulp:
// 2^-10 (f16), 2^-7 (bf16).
//
// Then the 4/8-bit weight kernels of each matmul_nbits (NBitsCheck.h): the
// GEMV entries and the tiled kernel at several row counts against the CPU
// executor's kernel, each element within its own bound (NBitsCheck.cpp).
#include "GemvMmaCheck.h"
#include "NBitsCheck.h"
#include "PrefillGraphsCheck.h"

#include "runtime/plan/Program.h"
#include "runtime/cpu/FusedBody.h"
#include "runtime/cuda/Device.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>



namespace {

// A driver call through the runtime's API table; failure ends the kernel's check.
#define CU(call)                                                                                   \
  do {                                                                                             \
    if (genrt::Status s_ = dev.check(dev.api->call, #call); !s_) {                                 \
      std::fprintf(stderr, "gpucheck: %s\n", s_.message().c_str());                               \
      return false;                                                                                \
    }                                                                                              \
  } while (0)

struct Options {
  int64_t tokens = 7, rows = 3;
  unsigned seed = 1;
  double tol = 1e-5;
  bool prefillGraphs = false; // --prefill-graphs (PrefillGraphsCheck.h)
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

/// The bound on max|gpu - cpu| / max|cpu| for a result stored as `t`.
double tolerance(DType t, const Options &o) {
  if (t == DType::F16)
    return std::ldexp(1.0, -10);
  if (t == DType::BF16)
    return std::ldexp(1.0, -7);
  return o.tol;
}

struct Row {
  std::string kernel, status, stored; // stored: the results' storage dtypes
  int64_t elements = 0;
  double maxAbs = 0, maxRel = 0, maxElemRel = 0;
  bool ok = false;
};

/// Per storage dtype of the results: the largest rel seen, and how many results.
struct DTypeStats {
  double maxRel = 0;
  int results = 0;
};

bool runKernel(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::KernelInfo &k,
               const genrt::cuda::KernelModule &mod, const Options &o,
               std::mt19937 &rng, Row &row, std::map<DType, DTypeStats> &byDType) {
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
  // ins: what the CPU executor reads (the body's dtypes); devIns: the same
  // values in the kernel's storage dtypes (f16/bf16: rounded first).
  std::vector<Tensor> ins, devIns;
  for (size_t i = 0; i < body.arguments.size(); ++i) {
    const genrt::ValueInfo &v = body.values[body.arguments[i]];
    DType stored = k.inputDTypes.at(i);
    if (v.dtype != DType::F32 && v.dtype != DType::I64 && v.dtype != DType::Bool) {
      row.status = "input dtype " + std::string(genrt::dtypeName(v.dtype));
      return true;
    }
    Tensor dev = randomTensor(v.dtype, evalShape(v.shape, env), rng, maxIndex).castTo(stored);
    ins.push_back(dev.castTo(v.dtype));
    devIns.push_back(std::move(dev));
  }
  genrt::cpu::KernelContext ctx;
  ctx.symbols = &env;
  std::vector<Tensor> ref(body.outputs.size());
  if (genrt::cpu::Error e = genrt::cpu::runFusedBody(body, plan.weights, ctx, ins, ref)) {
    row.status = "cpu: " + e.message();
    return true;
  }
  genrt::cuda::FusedLaunch launch;
  if (genrt::Status st = launch.prepare(dev, mod, k); !st) {
    row.status = st.message();
    return true;
  }
  std::vector<CUdeviceptr> bufs;
  for (const Tensor &t : devIns) {
    CUdeviceptr p = 0;
    CU(cuMemAlloc(&p, std::max<size_t>(t.numBytes(), 4)));
    if (t.numBytes())
      CU(cuMemcpyHtoD(p, t.rawData(), t.numBytes()));
    bufs.push_back(p);
  }
  std::vector<Tensor> gpuOut; // in the kernel's storage dtypes
  for (size_t i = 0; i < body.outputs.size(); ++i) {
    const genrt::ValueInfo &v = body.values[body.outputs[i]];
    Tensor t(k.outputDTypes.at(i), evalShape(v.shape, env));
    CUdeviceptr d = 0;
    CU(cuMemAlloc(&d, std::max<size_t>(t.numBytes(), 4)));
    CU(cuMemsetD8(d, 0xff, std::max<size_t>(t.numBytes(), 4))); // NaN: unwritten shows
    bufs.push_back(d);
    gpuOut.push_back(std::move(t));
  }
  if (genrt::Status st = launch.launch(dev, env, bufs, nullptr); !st) {
    std::fprintf(stderr, "gpucheck: %s\n", st.message().c_str());
    return false;
  }
  CU(cuCtxSynchronize());
  row.ok = true;
  std::set<std::string> storedNames;
  for (size_t i = 0; i < gpuOut.size(); ++i) {
    if (gpuOut[i].numBytes())
      CU(cuMemcpyDtoH(gpuOut[i].data<char>(), bufs[ins.size() + i], gpuOut[i].numBytes()));
    DType stored = gpuOut[i].dtype();
    const Tensor &c = ref[i];
    Tensor g = gpuOut[i].castTo(c.dtype()); // f16/bf16 -> f32 is exact
    if (c.numElements() != g.numElements() || c.dtype() != g.dtype()) {
      row.status = "result " + std::to_string(i) + ": size or dtype differs";
      row.ok = false;
      break;
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
    double rel = maxDiff == 0 ? 0 : maxDiff / std::max(maxRef, 1e-30);
    row.maxRel = std::max(row.maxRel, rel);
    row.ok &= rel < tolerance(stored, o);
    DTypeStats &st = byDType[stored];
    st.maxRel = std::max(st.maxRel, rel);
    ++st.results;
    storedNames.insert(genrt::dtypeName(stored));
  }
  for (const auto &n : storedNames)
    row.stored += (row.stored.empty() ? "" : ",") + n;
  for (CUdeviceptr b : bufs)
    dev.api->cuMemFree(b);
  if (row.status.empty())
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
    else if (a == "--prefill-graphs")
      o.prefillGraphs = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: gpucheck MODEL.plan... [--tokens=7] [--rows=3] [--seed=1]\n"
                  "       gpucheck --prefill-graphs MODEL.plan...  (@prefill from CUDA graphs against kernel by "
                  "kernel)\n");
      return 0;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "gpucheck: error: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    } else
      models.push_back(a);
  }
  if (models.empty()) {
    std::fprintf(stderr, "gpucheck: error: give one or more plans (genc compile ... -o MODEL.plan)\n");
    return 2;
  }
  if (o.prefillGraphs) {
    bool ok = true;
    for (const std::string &path : models)
      ok = gpucheck::checkPrefillGraphs(path) && ok;
    return ok ? 0 : 1;
  }
  genrt::cuda::Device dev;
  if (genrt::Status st = genrt::cuda::Device::open(0, dev); !st) {
    std::fprintf(stderr, "gpucheck: error: %s\n", st.message().c_str());
    return 2;
  }
  const char *devName = dev.name.c_str();
  int major = dev.major, minor = dev.minor;
  std::printf("device: %s (sm_%d%d); tokens = %lld, rows = %lld\n"
              "rel = max|gpu-cpu| / max|cpu| per result; elem rel = max(|gpu-cpu| / max(|cpu|, 1e-3));\n"
              "tolerance by the result's storage dtype: f32 %g, f16 %g, bf16 %g\n",
              devName, major, minor, static_cast<long long>(o.tokens), static_cast<long long>(o.rows),
              tolerance(DType::F32, o), tolerance(DType::F16, o), tolerance(DType::BF16, o));
  std::mt19937 rng(o.seed);
  int bad = 0, checked = 0, skipped = 0;
  std::map<DType, DTypeStats> byDType;
  for (const std::string &path : models) {
    genrt::Plan plan;
    if (genrt::Status st = genrt::loadPlan(path, plan); !st) {
      std::fprintf(stderr, "gpucheck: %s\n", st.message().c_str());
      return 2;
    }
    std::set<std::string> withKernel;
    for (const auto &k : plan.kernels)
      withKernel.insert(k.name);
    std::printf("\n%s: activations %s; %zu kernels, %zu fused bodies without one\n", path.c_str(),
                genrt::dtypeName(plan.activationDType), plan.kernels.size(),
                plan.functions.size() - withKernel.size());
    genrt::cuda::KernelModule mod;
    if (genrt::Status st = mod.load(dev, plan); !st) {
      std::fprintf(stderr, "gpucheck: %s: %s\n", path.c_str(), st.message().c_str());
      return 2;
    }
    std::printf("  code: %s\n", mod.source().c_str());
    std::printf("  %-26s %10s %8s %12s %12s %12s  %s\n", "kernel", "elements", "stored", "max abs",
                "max rel", "elem rel", "ok");
    for (const genrt::KernelInfo &k : plan.kernels) {
      Row row;
      row.kernel = k.name;
      if (!runKernel(dev, plan, k, mod, o, rng, row, byDType)) {
        row.status = "cuda error";
        row.ok = false;
      }
      ++checked;
      bad += !row.ok;
      std::printf("  %-26s %10lld %8s %12.3g %12.3g %12.3g  %s\n", row.kernel.c_str(),
                  static_cast<long long>(row.elements), row.stored.c_str(), row.maxAbs, row.maxRel,
                  row.maxElemRel, row.status.c_str());
    }
    for (const auto &[name, f] : plan.functions)
      if (!withKernel.count(name)) {
        ++skipped;
        std::printf("  %-26s  no kernel (runs on the CPU executor)\n", name.c_str());
      }
    std::vector<gpucheck::NBitsRow> nbits;
    bool nbitsRan = gpucheck::checkNBitsKernels(dev, plan, mod, rng, nbits);
    nbitsRan = nbitsRan && gpucheck::checkGemvMmaKernels(dev, plan, mod, rng, nbits);
    if (!nbits.empty())
      std::printf("  4/8-bit weights and tensor-core GEMVs: max abs = max|gpu - cpu|, ratio = max of |gpu - cpu| / the element's bound\n"
                  "  %-60s %10s %12s %10s  %s\n", "kernel", "elements", "max abs", "ratio", "ok");
    for (const gpucheck::NBitsRow &r : nbits) {
      ++checked;
      bad += !r.ok;
      std::printf("  %-60s %10lld %12.3g %10.3g  %s\n", r.name.c_str(), static_cast<long long>(r.elements), r.maxAbs,
                  r.maxRatio, r.status.c_str());
    }
    if (!nbitsRan) {
      ++bad;
      std::printf("  4/8-bit weights / tensor-core GEMVs: a CUDA error ended the check\n");
    }
    mod.unload();
  }
  std::printf("\n");
  for (const auto &[dt, st] : byDType)
    std::printf("results stored as %s: %d, max rel %.3g (tolerance %g)\n", genrt::dtypeName(dt),
                st.results, st.maxRel, tolerance(dt, o));
  std::printf("%d kernels checked, %d off, %d bodies without a kernel\n", checked, bad, skipped);
  return bad ? 1 : 0;
}
