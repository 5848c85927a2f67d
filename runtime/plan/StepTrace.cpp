#include "runtime/plan/StepTrace.h"

#include <algorithm>
#include <cstdio>

namespace genrt {

std::string stepTraceByOp(const StepSchedule &s, const std::vector<uint64_t> &stamps, double bytesPerUs) {
  if (s.items.empty() || stamps.size() != s.items.size() * kStepStamps)
    return "";
  auto at = [&](size_t item, size_t k) { return stamps[item * kStepStamps + k]; };
  uint64_t t0 = UINT64_MAX, tEnd = 0;
  for (size_t i = 0; i < s.items.size(); ++i)
    t0 = std::min(t0, at(i, 0)), tEnd = std::max(tEnd, at(i, 2));
  struct Op {
    int64_t items = 0, bytes = 0;
    uint64_t first = UINT64_MAX, last = 0;
    double wait = 0, work = 0;
  };
  std::vector<Op> by(s.ops.size());
  for (size_t i = 0; i < s.items.size(); ++i) {
    Op &o = by[size_t(s.items[i].op)];
    ++o.items;
    o.bytes += s.itemBytes(s.items[i]);
    o.first = std::min(o.first, at(i, 1));
    o.last = std::max(o.last, at(i, 2));
    o.wait += double(at(i, 1) - at(i, 0)) / 1e3;
    o.work += double(at(i, 2) - at(i, 1)) / 1e3;
  }
  auto us = [&](uint64_t t) { return t >= t0 ? double(t - t0) / 1e3 : 0.0; };
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%4s %-11s %6s %9s %9s %8s %9s %9s %11s %8s %7s  %s\n", "op", "kind", "items",
                "start us", "end us", "span us", "wait/item", "work/item", "bytes", "floor us", "x floor", "what");
  out += line;
  int64_t bytes = 0;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op &o = by[i];
    if (!o.items)
      continue;
    const double span = us(o.last) - us(o.first), floor = bytesPerUs > 0 ? double(o.bytes) / bytesPerUs : 0;
    char ratio[16] = "-";
    if (floor > 0)
      std::snprintf(ratio, sizeof ratio, "%.1f", span / floor);
    std::snprintf(line, sizeof line, "%4zu %-11s %6lld %9.2f %9.2f %8.2f %9.2f %9.2f %11lld %8.2f %7s  %s\n", i,
                  stepOpKindName(s.ops[i].kind), static_cast<long long>(o.items), us(o.first), us(o.last), span,
                  o.wait / double(o.items), o.work / double(o.items), static_cast<long long>(o.bytes), floor, ratio,
                  s.ops[i].name.c_str());
    out += line;
    bytes += o.bytes;
  }
  const double span = us(tEnd), floor = bytesPerUs > 0 ? double(bytes) / bytesPerUs : 0;
  std::snprintf(line, sizeof line, "step: %.2f us from the first turn to the last end; %lld weight bytes, floor %.2f us%s\n",
                span, static_cast<long long>(bytes), floor,
                floor > 0 ? (" (" + std::to_string(int(100 * floor / std::max(span, 1e-9) + 0.5)) + "% of it)").c_str()
                          : "");
  out += line;
  return out;
}

} // namespace genrt
