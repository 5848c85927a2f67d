// gpucheck --prefill-graphs (PrefillGraphsCheck.h).
#include "PrefillGraphsCheck.h"

#include "runtime/Runtime.h"
#include "runtime/plan/Program.h"
#include "tests/serve/SeededTokens.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gpucheck {
namespace {

using genrt::ChoiceAnswer;
using genrt::ChoiceRequest;
using genrt::Chunk;
using genrt::Status;
using genc_tests::seededTokens;

// The schedule's logits, step after step, on a decoder opened with the
// graphs on or off and the lone tokens on the decode kernel or not;
// `report` gets the decoder's choice report.
Status runSchedule(const std::string &path, bool graphs, bool loneDecode, std::vector<std::vector<float>> &steps,
                   std::string &report) {
  setenv("GENC_CUDA_PREFILL_GRAPHS", graphs ? "1" : "0", 1);
  setenv("GENC_CUDA_PREFILL_DECODE", loneDecode ? "1" : "0", 1);
  genrt::OpenedPlan opened;
  if (Status s = genrt::openPlan(path, "cuda", opened); !s)
    return s;
  genrt::Decoder &dec = *opened.decoder;
  const int64_t V = dec.info().vocabSize, L = dec.info().maxLength;
  if (dec.maxSlots() < 4)
    return Status::error("needs a plan of at least 4 slots");
  // Pieces of P tokens: 6 a prompt, and room for the decode rows' tokens.
  const int64_t P = std::min<int64_t>(13, (L - 16) / 7);
  if (P < 2)
    return Status::error("needs a plan of at least 30 positions");
  auto forward = [&](const std::vector<Chunk> &chunks) -> Status {
    ChoiceAnswer answer;
    if (Status s = dec.forward(chunks, ChoiceRequest::logits(), answer); !s)
      return s;
    steps.push_back(std::move(answer.logits));
    return Status::ok();
  };
  for (int32_t s = 0; s < dec.maxSlots(); ++s)
    dec.resetSlot(s);
  // Slots 0-2's prompts fill half the plan, so that their lone tokens'
  // keys span several of the decode kernel's key tiles: the splits' merge
  // then adds splits that each hold keys (short prompts left all but one
  // split empty).
  const int64_t C = std::max<int64_t>(5, L / 2);
  if (Status s = forward({Chunk{0, seededTokens(C, 1, V)}, Chunk{1, seededTokens(C - 1, 2, V)},
                          Chunk{2, seededTokens(C - 2, 3, V)}});
      !s)
    return s;
  // Two prompts in slot 3, one after the other, each in 6 pieces beside the
  // three decode rows: 12 runs of one shape (3 + P tokens, 4 logit rows).
  uint64_t seed = 100;
  for (int prompt = 0; prompt < 2; ++prompt) {
    dec.resetSlot(3);
    const std::vector<int64_t> p = seededTokens(6 * P, 50 + prompt, V);
    for (int64_t piece = 0; piece < 6; ++piece) {
      std::vector<Chunk> cs;
      for (int32_t slot = 0; slot < 3; ++slot)
        cs.push_back(Chunk{slot, seededTokens(1, seed++, V)});
      cs.push_back(Chunk{3, {p.begin() + piece * P, p.begin() + (piece + 1) * P}});
      if (Status s = forward(cs); !s)
        return s;
    }
  }
  report = dec.choiceReport();
  return Status::ok();
}

// The mixed steps' decode rows (rows 0-2 of steps 1-12: each its slot's
// lone token) on the decode kernel against the prefill kernel's one-token
// tiles: the sums run in another order, so within `bound` of the row's
// largest logit, the same argmax unless the two lead by less than that
// difference; every other row (the first step's prompts, the piece's row)
// the same bits.
bool checkLoneTokens(const std::string &path, const std::vector<std::vector<float>> &decodeKernel,
                     const std::vector<std::vector<float>> &prefillKernel, double bound) {
  double worst = 0;
  int64_t rows = 0;
  for (size_t k = 0; k < decodeKernel.size(); ++k) {
    const std::vector<float> &a = decodeKernel[k], &b = prefillKernel.at(k);
    const size_t V = a.size() / (k == 0 ? 3 : 4);
    if (b.size() != a.size() || V == 0) {
      std::printf("%s: lone tokens: step %zu gave %zu logits on the decode kernel, %zu on the prefill kernel  FAIL\n",
                  path.c_str(), k, a.size(), b.size());
      return false;
    }
    for (size_t r = 0; r * V < a.size(); ++r) {
      const float *x = a.data() + r * V, *y = b.data() + r * V;
      if (k == 0 || r == 3) {
        if (std::memcmp(x, y, V * sizeof(float)) != 0) {
          std::printf("%s: lone tokens: step %zu, row %zu (not a lone token) differs  FAIL\n", path.c_str(), k, r);
          return false;
        }
        continue;
      }
      double top = 0, diff = 0;
      size_t ax = 0, ay = 0;
      for (size_t v = 0; v < V; ++v) {
        if (!std::isfinite(x[v]) || !std::isfinite(y[v])) {
          std::printf("%s: lone tokens: step %zu, row %zu, logit %zu not finite  FAIL\n", path.c_str(), k, r, v);
          return false;
        }
        top = std::max(top, static_cast<double>(std::fabs(y[v])));
        diff = std::max(diff, static_cast<double>(std::fabs(x[v] - y[v])));
        ax = x[v] > x[ax] ? v : ax;
        ay = y[v] > y[ay] ? v : ay;
      }
      const double ratio = diff / std::max(top, 1e-6);
      worst = std::max(worst, ratio);
      ++rows;
      if (ratio > bound || (ax != ay && y[ay] - y[ax] > diff)) {
        std::printf("%s: lone tokens: step %zu, row %zu: max |decode - prefill| %.3g (%.3g of the largest), argmax "
                    "%zu / %zu  FAIL\n",
                    path.c_str(), k, r, diff, ratio, ax, ay);
        return false;
      }
    }
  }
  std::printf("%s: lone tokens: %lld decode rows of mixed steps on the decode kernel within %.3g of the largest "
              "logit of the prefill kernel's, argmax equal; every other row the same bits  ok\n",
              path.c_str(), static_cast<long long>(rows), worst);
  return true;
}

} // namespace

bool checkPrefillGraphs(const std::string &path) {
  std::vector<std::vector<float>> off, on;
  std::string offReport, onReport;
  std::vector<std::vector<float>> tiles;
  std::string tilesReport;
  Status s = runSchedule(path, false, true, off, offReport);
  if (s)
    s = runSchedule(path, true, true, on, onReport);
  if (s)
    s = runSchedule(path, false, false, tiles, tilesReport);
  unsetenv("GENC_CUDA_PREFILL_GRAPHS");
  unsetenv("GENC_CUDA_PREFILL_DECODE");
  if (!s) {
    std::printf("%s: prefill graphs: %s  FAIL\n", path.c_str(), s.message().c_str());
    return false;
  }
  const size_t at = onReport.find("@prefill graphs: ");
  long long captured = -1, replayed = -1;
  if (at != std::string::npos)
    std::sscanf(onReport.c_str() + at, "@prefill graphs: %lld captured, %lld replayed", &captured, &replayed);
  // The first piece of each shape runs kernel by kernel, the second captures, the rest replay.
  if (captured < 1 || replayed < 8) {
    std::printf("%s: prefill graphs: %lld captured, %lld replayed where 12 runs of one shape should replay 10 (%s)  FAIL\n",
                path.c_str(), captured, replayed, onReport.c_str());
    return false;
  }
  size_t values = 0;
  for (size_t k = 0; k < off.size(); ++k) {
    if (k >= on.size() || on[k].size() != off[k].size()) {
      std::printf("%s: prefill graphs: step %zu gave %zu logits with the graphs, %zu without  FAIL\n", path.c_str(), k,
                  k < on.size() ? on[k].size() : size_t(0), off[k].size());
      return false;
    }
    for (size_t v = 0; v < off[k].size(); ++v)
      if (std::memcmp(&off[k][v], &on[k][v], sizeof(float)) != 0) {
        std::printf("%s: prefill graphs: step %zu, logit %zu: %.9g kernel by kernel, %.9g from the graph  FAIL\n",
                    path.c_str(), k, v, off[k][v], on[k][v]);
        return false;
      }
    values += off[k].size();
  }
  std::printf("%s: prefill graphs: %zu steps, %zu logits the same bits with and without (%lld captured, %lld "
              "replayed)  ok\n",
              path.c_str(), off.size(), values, captured, replayed);
  // 1% of the largest logit, or 8 roundings of the activations' type where
  // that is more: the two kernels' attention outputs round differently, and
  // the difference grows through the layers with the type's unit (an H100,
  // 2026-12-08, prompts of half a 64-position plan: f16 0.0017 of the
  // largest, 3.4 units; bf16 0.012, 3.1 units).
  genrt::Plan plan;
  if (Status ps = genrt::loadPlan(path, plan); !ps) {
    std::printf("%s: prefill graphs: %s  FAIL\n", path.c_str(), ps.message().c_str());
    return false;
  }
  const double unit = plan.activationDType == genrt::DType::BF16  ? 1.0 / 256
                      : plan.activationDType == genrt::DType::F16 ? 1.0 / 2048
                                                                  : 0.0;
  return checkLoneTokens(path, off, tiles, std::max(0.01, 8 * unit));
}

} // namespace gpucheck
