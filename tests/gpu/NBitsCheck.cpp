// The 4/8-bit weight kernels against the CPU executor's (NBitsCheck.h).
//
// Each matmul_nbits op of @prefill / @decode_step / @encode with a kernel
// family (`gpu_gemv`): its weights as the plan stores them, uploaded as the
// executor uploads them; a [M, K] random (normal, rounded to the op's
// storage of a, the CPU reading the same rounded values); y poisoned with
// 0xff bytes (NaN) so an unwritten element fails. M runs over 1, 2, 3, 5, 8
// on the GEMV entries (each M's entry as the executor picks it), 13 and 32 on
// the 8-row entry in chunks, 3, 70, 130 on the tiled kernel (one and
// several tiles of rows), and 4, 5, 9, 16, 17, 32, 50, 64 on the tensor-core
// entries and 3, 70, 130 on the tensor-core tiles where the family has them
// (gpu_gemv_mma); the tensor-core entries again at 5, 32, 50 rows with K
// split over 2, 3 and 4 blocks (GencNBitsParams::split), each group's ticket
// back at zero after the launch. Rows alone: within each split, M = 5 on
// _mma1 must equal the first 5 rows of M = 50 on _mma4 bit for bit (a row's
// result does not depend on the batch it shares a launch with).
//
// The bound, per element: both sides sum K products in f32 in their own
// order, so each is within K u Σ|a w| of the exact sum (u = 2^-24); the GPU
// then rounds its sum to y's storage (relative u_y: 2^-11 f16, 2^-8 bf16,
// 0 f32). |gpu - cpu| <= u_y |cpu| + 3 K u Σ|a w| + 2^-24 (f16's
// subnormals). A wrong code, scale, zero point or row is off by a
// sizeable part of Σ|a w| and fails it.
#include "NBitsCheck.h"

#include "DeviceBuffers.h"
#include "runtime/plan/Attr.h"
#include "runtime/plan/NBitsLayout.h"
#include "runtime/cpu/MatmulNBits.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/NBitsAbi.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace gpucheck {
namespace {

using genrt::DType;
using genrt::Tensor;

// One op: its weights on the device, then a row per (entry, M).
bool checkOp(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::Program &prog,
             const genrt::OpInfo &op, const genrt::cuda::KernelModule &mod, std::mt19937 &rng,
             std::vector<NBitsRow> &rows) {
  const std::string family = genrt::attrStr(op.attrs, "gpu_gemv", "");
  const std::string where = " (" + prog.name + " \"" + op.loc + "\")";
  auto weight = [&](size_t i) -> const Tensor & { return plan.weights.at(prog.values.at(op.operands[i]).index); };
  const genrt::ValueInfo &av = prog.values.at(op.operands[0]), &yv = prog.values.at(op.results.at(0));
  if (av.shape.empty() || !av.shape.back().isConstant() || op.operands.size() < 3) {
    rows.push_back({family + where, "a has no constant K"});
    return true;
  }
  genrt::NBitsShape s{genrt::attrInt(op.attrs, "bits", 0), genrt::attrInt(op.attrs, "block_size", 0),
                      av.shape.back().constant(), genrt::attrInt(op.attrs, "n", 0)};
  const bool hasZp = op.operands.size() == 4;
  genrt::ZeroPointKind kind;
  if (std::string bad = genrt::checkNBitsOperands(s, weight(1).dtype(), weight(1).shape(), weight(2).dtype(),
                                                  weight(2).shape(), hasZp, hasZp ? weight(3).dtype() : DType::U8,
                                                  hasZp ? weight(3).shape() : std::vector<int64_t>{}, kind);
      !bad.empty()) {
    rows.push_back({family + where, "weights: " + bad});
    return true;
  }
  // The CPU's view: codes and packed zero points as stored, floats widened.
  const Tensor scales = weight(2).castTo(DType::F32);
  const Tensor zpFloat = kind == genrt::ZeroPointKind::Float ? weight(3).castTo(DType::F32) : Tensor();
  genrt::cpu::NBitsMatrix w;
  w.shape = s;
  w.codes = static_cast<const uint8_t *>(weight(1).rawData());
  w.scales = scales.data<float>();
  w.zeroPoints = kind;
  if (kind == genrt::ZeroPointKind::Packed)
    w.zpPacked = static_cast<const uint8_t *>(weight(3).rawData());
  else if (kind == genrt::ZeroPointKind::Float)
    w.zpFloat = zpFloat.data<float>();
  // |W| column by column, for the bound's Σ|a w|.
  std::vector<float> absW(static_cast<size_t>(s.K * s.N));
  genrt::cpu::dequantizeNBits(w, 0, s.N, absW.data());
  for (float &x : absW)
    x = std::fabs(x);

  Buffers b{dev, {}};
  genrt::cuda::GencNBitsParams p{};
  for (size_t i = 1; i < op.operands.size(); ++i)
    if (!b.upload(weight(i).rawData(), weight(i).numBytes(), i == 1 ? p.codes : i == 2 ? p.scales : p.zp))
      return false;
  p.K = s.K;
  p.N = s.N;
  const int64_t groups = (s.N + genrt::cuda::kNBitsMmaColumns - 1) / genrt::cuda::kNBitsMmaColumns;
  if (!b.alloc(groups * genrt::cuda::kGemvMmaMaxSplit * genrt::cuda::kNBitsMmaPartBytes, p.parts) ||
      !b.alloc(groups * 4, p.tickets) || dev.api->cuMemsetD8(p.tickets, 0, groups * 4) != CUDA_SUCCESS)
    return false;
  const DType aStored = av.stored, yStored = yv.stored;
  struct Run {
    const char *entry;
    int64_t M;
    int split = 1;
  };
  const Run runs[] = {{"_m1", 1},      {"_m2", 2},      {"_m4", 3},      {"_m8", 5},      {"_m8", 8},
                      {"_m8", 13},     {"_m8", 32},     {"_tiles", 3},   {"_tiles", 70},  {"_tiles", 130},
                      {"_mma1", 4},    {"_mma1", 5},    {"_mma1", 9},    {"_mma1", 16},   {"_mma2", 17},   {"_mma2", 32},   {"_mma4", 50},
                      {"_mma4", 64},   {"_mma_tiles", 3}, {"_mma_tiles", 70}, {"_mma_tiles", 130},
                      {"_mma1", 5, 2}, {"_mma2", 32, 2}, {"_mma4", 50, 2}, {"_mma1", 5, 3}, {"_mma2", 32, 3},
                      {"_mma4", 50, 3}, {"_mma1", 5, 4}, {"_mma2", 32, 4}, {"_mma4", 50, 4}};
  const bool hasMma = genrt::attrInt(op.attrs, "gpu_gemv_mma", 0) != 0;
  std::normal_distribution<float> g50(0.f, 1.f);
  Tensor a50(DType::F32, {50, s.K}); // the M = 50 runs' a; the M = 5 tensor-core runs take its first rows
  for (int64_t i = 0; i < 50 * s.K; ++i)
    a50.data<float>()[i] = g50(rng);
  std::map<int, std::vector<char>> firstRows[2]; // by split: y's first 5 rows of M = 5 on _mma1, of M = 50 on _mma4
  for (const Run &r : runs) {
    const int mr = std::strcmp(r.entry, "_mma1") == 0 ? 1 : std::strcmp(r.entry, "_mma2") == 0 ? 2
                 : std::strcmp(r.entry, "_mma4") == 0 ? 4 : 0;
    const bool mmaTiles = std::strcmp(r.entry, "_mma_tiles") == 0;
    if ((mr || mmaTiles) && !hasMma)
      continue; // a family without the tensor-core entries (NBitsAbi.h)
    NBitsRow row;
    row.name = family + r.entry + " M=" + std::to_string(r.M) +
               (r.split > 1 ? ", K split over " + std::to_string(r.split) + " blocks" : "") + where;
    CUfunction fn = nullptr;
    if (genrt::Status st = mod.function(family + r.entry, fn); !st) {
      row.status = st.message();
      rows.push_back(row);
      continue;
    }
    const int64_t M = r.M;
    std::normal_distribution<float> g(0.f, 1.f);
    Tensor a32(DType::F32, {M, s.K});
    const bool shared = mr && (M == 5 || M == 50);
    for (int64_t i = 0; i < M * s.K; ++i)
      a32.data<float>()[i] = shared ? a50.data<float>()[i] : g(rng);
    const Tensor aDev = a32.castTo(aStored);
    const Tensor aCpu = aDev.castTo(DType::F32);
    Tensor ref(DType::F32, {M, s.N});
    genrt::cpu::matmulNBits(aCpu.data<float>(), w, ref.data<float>(), M, nullptr);
    Tensor yDev(yStored, {M, s.N});
    CUdeviceptr y = 0;
    if (!b.upload(aDev.rawData(), aDev.numBytes(), p.a) || !b.alloc(yDev.numBytes(), y) ||
        dev.api->cuMemsetD8(y, 0xff, yDev.numBytes()) != CUDA_SUCCESS) // NaN: unwritten shows
      return false;
    p.y = y;
    p.M = M;
    p.split = r.split;
    void *args[] = {&p};
    using namespace genrt::cuda;
    const bool tiles = std::strcmp(r.entry, "_tiles") == 0 || mmaTiles;
    const unsigned gx = static_cast<unsigned>(tiles ? (s.N + kNBitsTile - 1) / kNBitsTile
                                              : mr  ? groups * r.split
                                                    : (s.N + kNBitsThreads / 32 - 1) / (kNBitsThreads / 32));
    const unsigned gy = static_cast<unsigned>(tiles ? (M + kNBitsTile - 1) / kNBitsTile
                                              : mr  ? 1
                                                    : (M + kNBitsGemvRows - 1) / kNBitsGemvRows);
    std::vector<unsigned> tickets(static_cast<size_t>(groups), 1u);
    if (genrt::Status st = dev.launch(fn, gx, gy, 1, kNBitsThreads, 1, 0, nullptr, args, row.name); !st ||
        dev.api->cuCtxSynchronize() != CUDA_SUCCESS ||
        dev.api->cuMemcpyDtoH(yDev.data<char>(), y, yDev.numBytes()) != CUDA_SUCCESS ||
        dev.api->cuMemcpyDtoH(tickets.data(), p.tickets, groups * 4) != CUDA_SUCCESS) {
      row.status = "cuda error";
      rows.push_back(row);
      return false;
    }
    const bool ticketsZero = std::all_of(tickets.begin(), tickets.end(), [](unsigned t) { return t == 0; });
    if (shared) {
      const char *bytes = yDev.data<char>();
      firstRows[M == 50][r.split].assign(bytes, bytes + 5 * s.N * static_cast<int64_t>(genrt::dtypeSize(yStored)));
    }
    const Tensor got = yDev.castTo(DType::F32);
    const double uy = roundingOf(yStored), u = std::ldexp(1.0, -24);
    row.ok = true;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < s.N; ++n) {
        double sumAbs = 0;
        for (int64_t k = 0; k < s.K; ++k)
          sumAbs += std::fabs(aCpu.data<float>()[m * s.K + k]) * absW[n * s.K + k];
        const double c = ref.data<float>()[m * s.N + n], gv = got.data<float>()[m * s.N + n];
        const double bound = uy * std::fabs(c) + 3.0 * s.K * u * sumAbs + u;
        const double d = std::isnan(gv) ? INFINITY : std::fabs(gv - c);
        row.maxAbs = std::max(row.maxAbs, d);
        row.maxRatio = std::max(row.maxRatio, d / bound);
        row.ok &= d <= bound;
      }
    row.elements = M * s.N;
    row.ok &= ticketsZero;
    row.status = row.ok ? "ok" : !ticketsZero ? "TICKETS NOT ZERO" : "MISMATCH";
    rows.push_back(row);
  }
  for (const auto &[split, bytes] : firstRows[0])
    if (auto it = firstRows[1].find(split); it != firstRows[1].end()) {
      NBitsRow row;
      row.name = family + " rows alone (M=5 on _mma1 vs the first 5 of M=50 on _mma4)" +
                 (split > 1 ? ", K split over " + std::to_string(split) + " blocks" : "") + where;
      row.elements = 5 * s.N;
      row.ok = bytes == it->second;
      row.status = row.ok ? "ok" : "MISMATCH";
      rows.push_back(row);
    }
  return true;
}

} // namespace

bool checkNBitsKernels(const genrt::cuda::Device &dev, const genrt::Plan &plan, const genrt::cuda::KernelModule &mod,
                       std::mt19937 &rng, std::vector<NBitsRow> &rows) {
  for (const auto &[name, prog] : plan.programs)
    for (const genrt::OpInfo &op : prog.ops)
      if (op.kind == "matmul_nbits" && !genrt::attrStr(op.attrs, "gpu_gemv", "").empty())
        if (!checkOp(dev, plan, prog, op, mod, rng, rows))
          return false;
  return true;
}

} // namespace gpucheck
