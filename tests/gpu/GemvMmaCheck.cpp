// The tensor-core GEMV entries against the host (GemvMmaCheck.h).
//
// Each matmul with a `gpu_gemv` family whose a and weight are both f16 or both
// bf16 and whose K is a multiple of 32 (what the executor asks of them): a
// random weight [N, K] and bias (normal, rounded to their storage; the
// entries read any weight the same way), a random a [M, K] rounded to its
// storage, y poisoned with 0xff bytes (NaN) so an unwritten element fails.
// M runs over 2, 3, 9, 16 on _mma16 (32 weight rows a block) and, where the
// plan has them (genc with GENC_GEMV_MMA_WIDE=1), 2, 3, 16 on _mmaw16, 17, 32
// on _mmaw32 and 33, 50, 64 on _mmaw64 (64 a block). The bound, per element: the GPU sums K products of exact 16-bit
// numbers in f32 (K u Σ|a w| at most, u = 2^-24), the host in double; then
// y's rounding (relative u_y: 2^-11 f16, 2^-8 bf16, 0 f32), and a GELU's
// slope (at most 1.13) on the sum's error. |gpu - host| <= u_y |host| +
// 1.2 (K u Σ|a w| + 2^-24). A wrong row, column or k order of one operand is
// off by a sizeable part of Σ|a w| and fails it.
//
// Then "rows alone": the first 3 rows of the M = 16 run on _mma16 must
// equal, bit for bit, its M = 3 run, and the first 3 of the M = 50 run on
// _mmaw64 the M = 3 run on _mmaw16 (the executor relies on a row's result
// not depending on the batch it shares a launch with).
// The same again for M = 3, 17, 50 with 2, 3 and 4 blocks splitting K
// (GemvAbi.h's gemvMmaSplit), rows alone within each, and every group's
// ticket back at zero after the launch (the next launch counts from it).
#include "GemvMmaCheck.h"

#include "DeviceBuffers.h"
#include "runtime/plan/Attr.h"
#include "runtime/plan/Epilogue.h"
#include "runtime/cuda/GemvAbi.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpucheck {
namespace {

using genrt::DType;
using genrt::Tensor;

double activate(const std::string &act, double x) {
  if (act == "relu")
    return x > 0 ? x : 0;
  if (act == "gelu_tanh")
    return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return x;
}

Tensor randomTensor(std::mt19937 &rng, std::vector<int64_t> shape, DType stored) {
  std::normal_distribution<float> g(0.f, 1.f);
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = g(rng);
  return t.castTo(stored);
}

bool checkOp(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::Program &prog,
             const genrt::OpInfo &op, const genrt::cuda::KernelModule &mod, std::mt19937 &rng,
             std::vector<NBitsRow> &rows) {
  const std::string family = genrt::attrStr(op.attrs, "gpu_gemv", "");
  const std::string where = " (" + prog.name + " \"" + op.loc + "\")";
  const genrt::ValueInfo &av = prog.values.at(op.operands[0]), &yv = prog.values.at(op.results.at(0));
  const Tensor &wPlan = plan.weights.at(prog.values.at(op.operands[1]).index);
  genrt::Epilogue e;
  if (!genrt::parseEpilogue(genrt::attrStr(op.attrs, "epilogue", ""), e) || av.shape.empty() ||
      !av.shape.back().isConstant() || yv.shape.empty() || !yv.shape.back().isConstant())
    return true;
  const int64_t K = av.shape.back().constant(), N = yv.shape.back().constant();
  const DType aStored = av.stored, yStored = yv.stored;
  if (aStored != wPlan.dtype() || (aStored != DType::F16 && aStored != DType::BF16) || K % 32)
    return true; // no tensor-core entries (GemvAbi.h)
  CUfunction probe = nullptr;
  if (!mod.function(genrt::cuda::gemvMmaName(family, 16), probe))
    return true;
  using genrt::cuda::kGemvMmaOutputs;
  using genrt::cuda::kGemvMmaWideOutputs;
  const DType bStored = e.bias ? prog.values.at(op.operands[2]).stored : DType::F32;

  const Tensor wDev = randomTensor(rng, {N, K}, aStored), wHost = wDev.castTo(DType::F32);
  const Tensor biasDev = e.bias ? randomTensor(rng, {N}, bStored) : Tensor();
  const Tensor biasHost = e.bias ? biasDev.castTo(DType::F32) : Tensor();
  Buffers b{dev, {}};
  genrt::cuda::GencGemvParams p{};
  if (!b.upload(wDev.rawData(), wDev.numBytes(), p.w) ||
      (e.bias && !b.upload(biasDev.rawData(), biasDev.numBytes(), p.bias)))
    return false;
  p.K = K;
  p.N = N;
  struct Run {
    int rows;
    bool wide; // _mmaw: 64 weight rows a block
    int64_t M;
  };
  const Run runs[] = {{16, false, 2}, {16, false, 3}, {16, false, 9}, {16, false, 16}, {16, true, 2},
                      {16, true, 3},  {16, true, 16},  {32, true, 17},  {32, true, 32},  {64, true, 33},
                      {64, true, 50}, {64, true, 64}};
  const Tensor a50 = randomTensor(rng, {50, K}, aStored); // the M = 50 run's a; M = 3 takes its first rows
  const int64_t groups = (N + kGemvMmaOutputs - 1) / kGemvMmaOutputs;
  const int64_t wideGroups = (N + kGemvMmaWideOutputs - 1) / kGemvMmaWideOutputs;
  const int64_t partBytes = std::max(groups * genrt::cuda::kGemvMmaPartBytes,
                                     wideGroups * genrt::cuda::kGemvMmaWidePartBytes);
  if (!b.alloc(genrt::cuda::kGemvMmaMaxSplit * partBytes, p.parts) || !b.alloc(groups * 4, p.tickets) ||
      dev.api->cuMemsetD8(p.tickets, 0, groups * 4) != CUDA_SUCCESS)
    return false;
  for (unsigned split : {1u, 2u, 3u, 4u}) {
    std::vector<char> firstRows[2]; // y's first 3 rows: of M = 3 on _mmaw16, of M = 50 on _mmaw64
    std::vector<char> narrowRows[2]; // and of M = 3 and M = 16 on _mma16
    const std::string inSplit = split > 1 ? ", K split over " + std::to_string(split) + " blocks" : "";
    p.split = split;
    for (const Run &r : runs) {
      if (split > 1 && r.M != 3 && r.M != 17 && r.M != 50 && (r.M != 16 || r.wide))
        continue;
      const std::string entry =
          r.wide ? genrt::cuda::gemvMmaWideName(family, r.rows) : genrt::cuda::gemvMmaName(family, r.rows);
      NBitsRow row;
      row.name = entry + " M=" + std::to_string(r.M) + inSplit + where;
      CUfunction fn = nullptr;
      if (r.wide && !mod.function(entry, fn))
        continue; // a plan compiled without GENC_GEMV_MMA_WIDE=1
      if (genrt::Status st = mod.function(entry, fn); !st) {
        row.status = st.message();
        rows.push_back(row);
        continue;
      }
      const int64_t M = r.M;
      const bool fromA50 = M == 50 || M == 3 || (M == 16 && !r.wide);
      Tensor aDev = fromA50 ? Tensor(aStored, {M, K}) : randomTensor(rng, {M, K}, aStored);
      if (fromA50)
        std::memcpy(aDev.data<char>(), a50.rawData(), aDev.numBytes());
      const Tensor aHost = aDev.castTo(DType::F32);
      Tensor yDev(yStored, {M, N});
      CUdeviceptr y = 0;
      if (!b.upload(aDev.rawData(), aDev.numBytes(), p.a) || !b.alloc(yDev.numBytes(), y) ||
          dev.api->cuMemsetD8(y, 0xff, yDev.numBytes()) != CUDA_SUCCESS)
        return false;
      p.y = y;
      p.M = M;
      void *args[] = {&p};
      const unsigned grid = static_cast<unsigned>((r.wide ? wideGroups : groups) * split);
      std::vector<unsigned> tickets(static_cast<size_t>(groups), 1u);
      if (genrt::Status st = dev.launch(fn, grid, 1, 1, genrt::cuda::kGemvThreads, 1, 0, nullptr, args, row.name);
          !st || dev.api->cuCtxSynchronize() != CUDA_SUCCESS ||
          dev.api->cuMemcpyDtoH(yDev.data<char>(), y, yDev.numBytes()) != CUDA_SUCCESS ||
          dev.api->cuMemcpyDtoH(tickets.data(), p.tickets, groups * 4) != CUDA_SUCCESS) {
        row.status = "cuda error";
        rows.push_back(row);
        return false;
      }
      const bool ticketsZero = std::all_of(tickets.begin(), tickets.end(), [](unsigned t) { return t == 0; });
      if (fromA50) { // y's first 3 rows
        const char *bytes = yDev.data<char>();
        (r.wide ? firstRows : narrowRows)[M != 3].assign(bytes,
                                                         bytes + 3 * N * static_cast<int64_t>(genrt::dtypeSize(yStored)));
      }
      const Tensor got = yDev.castTo(DType::F32);
      const double uy = roundingOf(yStored), u = std::ldexp(1.0, -24);
      row.ok = true;
      const float *ah = aHost.data<float>(), *wh = wHost.data<float>();
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double sum = e.bias ? biasHost.data<float>()[n] : 0.0, sumAbs = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double t = static_cast<double>(ah[m * K + k]) * wh[n * K + k];
            sum += t;
            sumAbs += std::fabs(t);
          }
          const double c = activate(e.activation, sum), gv = got.data<float>()[m * N + n];
          const double bound = uy * std::fabs(c) + 1.2 * (K * u * sumAbs + u);
          const double d = std::isnan(gv) ? INFINITY : std::fabs(gv - c);
          row.maxAbs = std::max(row.maxAbs, d);
          row.maxRatio = std::max(row.maxRatio, d / bound);
          row.ok &= d <= bound;
        }
      row.elements = M * N;
      row.ok &= ticketsZero;
      row.status = row.ok ? "ok" : !ticketsZero ? "TICKETS NOT ZERO" : "MISMATCH";
      rows.push_back(row);
    }
    // y's first 3 rows of two runs, the same bits (where both ran).
    auto alone = [&](const std::vector<char> (&pair)[2], const std::string &runs) {
      if (pair[0].empty() || pair[1].empty())
        return;
      NBitsRow row;
      row.name = family + " rows alone (" + runs + ")" + inSplit + where;
      row.elements = 3 * N;
      row.ok = pair[0] == pair[1];
      row.status = row.ok ? "ok" : "MISMATCH";
      rows.push_back(row);
    };
    alone(firstRows, "M=3 on _mmaw16 vs the first 3 of M=50 on _mmaw64");
    alone(narrowRows, "M=3 on _mma16 vs the first 3 of M=16");
  }
  return true;
}

} // namespace

bool checkGemvMmaKernels(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::cuda::KernelModule &mod,
                         std::mt19937 &rng, std::vector<NBitsRow> &rows) {
  for (const auto &[name, prog] : plan.programs)
    for (const genrt::OpInfo &op : prog.ops)
      if (op.kind == "matmul" && op.operands.size() >= 2 && !genrt::attrStr(op.attrs, "gpu_gemv", "").empty() &&
          prog.values.at(op.operands[1]).storage == genrt::Storage::Weight)
        if (!checkOp(dev, plan, prog, op, mod, rng, rows))
          return false;
  return true;
}

} // namespace gpucheck
