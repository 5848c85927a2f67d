// The CUDA executor's diagnostics (Diagnostics.h): the profile table, the
// reports printed at close, the attention trace.
#include "runtime/cuda/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace genrt::cuda {

void StepProfile::add(const std::string &kind, double stepMs) {
  auto &slot = ms[kind];
  slot.first += stepMs;
  slot.second += 1;
}

void StepProfile::print() const {
  for (const auto &[kind, v] : ms)
    std::fprintf(stderr, "genrun: profile: %-20s %10.3f ms over %6lld steps (%.4f ms each)\n", kind.c_str(), v.first,
                 static_cast<long long>(v.second), v.first / std::max<int64_t>(1, v.second));
}

CloseReport::~CloseReport() {
  if (profile)
    profile->print();
  if (tokenCheck)
    tokenCheck->report();
  if (stepCheck)
    stepCheck->report();
}

void StepCheck::add(const float *ref, const float *got, int64_t R, int64_t V) {
  ++steps;
  for (int64_t r = 0; r < R; ++r) {
    int64_t a = 0, b = 0;
    for (int64_t v = 0; v < V; ++v) {
      const float x = ref[r * V + v], y = got[r * V + v];
      if (!std::isfinite(y) || !std::isfinite(x)) {
        ++nonFinite;
        continue;
      }
      maxDiff = std::max(maxDiff, double(std::fabs(x - y)));
      maxRef = std::max(maxRef, double(std::fabs(x)));
      if (x > ref[r * V + a])
        a = v;
      if (y > got[r * V + b])
        b = v;
    }
    ++rows;
    argmaxSame += a == b;
  }
}

void StepCheck::report() const {
  std::fprintf(stderr,
               "genrun: step check: %lld decode steps, %lld rows: max |step kernel - kernel by kernel| %.3g "
               "(max |logit| %.3g, ratio %.3g), argmax equal %lld of %lld, %lld non-finite logits\n",
               static_cast<long long>(steps), static_cast<long long>(rows), maxDiff, maxRef,
               maxRef > 0 ? maxDiff / maxRef : 0.0, static_cast<long long>(argmaxSame), static_cast<long long>(rows),
               static_cast<long long>(nonFinite));
}

void printAttentionTrace(const Device &dev, const KernelModule &mod) {
  size_t bytes = 0;
  const CUdeviceptr at = mod.global("genc_attn_trace", bytes);
  unsigned long long t[10][16] = {};
  if (!at || bytes != sizeof t || dev.api->cuMemcpyDtoH(t, at, sizeof t) != CUDA_SUCCESS) {
    std::fprintf(stderr, "genrun: no attention trace in this plan (compile it with genc --attention-trace)\n");
    return;
  }
  const unsigned long long base = t[0][0];
  for (int row = 0; row < 10; ++row) {
    if (!t[row][0] && !t[row][2])
      continue;
    std::fprintf(stderr, "genrun: attention trace %s %d: ns", row == 9 ? "merge" : "split", row == 9 ? 0 : row);
    for (int i = 0; i < 8; ++i)
      if (t[row][i])
        std::fprintf(stderr, " %d:%lld", i, static_cast<long long>(t[row][i] - base));
    std::fprintf(stderr, " | cycles");
    for (int i = 1; i < 8; ++i)
      if (t[row][8 + i] && t[row][7 + i])
        std::fprintf(stderr, " %d:%lld", i, static_cast<long long>(t[row][8 + i] - t[row][7 + i]));
    std::fprintf(stderr, "\n");
  }
}

} // namespace genrt::cuda
