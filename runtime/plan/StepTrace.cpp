#include "runtime/plan/StepTrace.h"

#include <algorithm>
#include <cstdio>
#include <map>

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
    uint64_t first = UINT64_MAX, last = 0, lastMet = 0;
    double wait = 0, work = 0, maxWork = 0;
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
    o.maxWork = std::max(o.maxWork, double(at(i, 2) - at(i, 1)) / 1e3);
    o.lastMet = std::max(o.lastMet, at(i, 1));
  }
  auto us = [&](uint64_t t) { return t >= t0 ? double(t - t0) / 1e3 : 0.0; };
  std::string out;
  char line[512];
  // last met: when the op's last item could start (its waits met); max
  // work: its longest item. An op's span is the later of the two plus the
  // other: a straggling start or a straggling item.
  std::snprintf(line, sizeof line, "%4s %-11s %6s %9s %9s %8s %9s %9s %9s %9s %11s %8s %7s  %s\n", "op", "kind",
                "items", "start us", "end us", "span us", "wait/item", "work/item", "last met", "max work", "bytes",
                "floor us", "x floor", "what");
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
    std::snprintf(line, sizeof line, "%4zu %-11s %6lld %9.2f %9.2f %8.2f %9.2f %9.2f %9.2f %9.2f %11lld %8.2f %7s  %s\n",
                  i, stepOpKindName(s.ops[i].kind), static_cast<long long>(o.items), us(o.first), us(o.last), span,
                  o.wait / double(o.items), o.work / double(o.items), us(o.lastMet), o.maxWork,
                  static_cast<long long>(o.bytes), floor, ratio, s.ops[i].name.c_str());
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

std::string stepTraceByKind(const StepSchedule &s, const std::vector<uint64_t> &t) {
  if (s.items.empty() || t.size() != s.items.size() * kStepStamps)
    return "";
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < s.items.size(); ++i)
    lo = std::min(lo, t[kStepStamps * i]), hi = std::max(hi, t[kStepStamps * i + 2]);
  struct Sum {
    int64_t items = 0, pages = 0;
    double work = 0, wait = 0, starved = 0, unissued = 0, routine = 0, cycles = 0, issuing = 0, computing = 0, prologue = 0, closing = 0;
  };
  std::map<std::string, Sum> by;
  double work = 0, wait = 0;
  for (size_t i = 0; i < s.items.size(); ++i) {
    const StepItem &it = s.items[i];
    const StepOp &op = s.ops[size_t(it.op)];
    Sum &k = by[stepOpKindName(op.kind)];
    ++k.items;
    k.pages += s.itemPages(it);
    const uint64_t *st = &t[kStepStamps * i];
    const double wt = double(st[1] - st[0]) / 1e3, wk = double(st[2] - st[1]) / 1e3;
    k.wait += wt, k.work += wk, wait += wt, work += wk;
    k.starved += double(st[3]), k.cycles += double(st[4]), k.issuing += double(st[5]), k.computing += double(st[6]);
    k.prologue += double(st[7]), k.closing += double(st[8]), k.unissued += double(st[9]),
        k.routine += double(st[10]);
  }
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%.1f us from the first item's turn to the last's end; the blocks waited %.0f%% of "
                "their time\n", double(hi - lo) / 1e3, wait + work > 0 ? 100 * wait / (wait + work) : 0.0);
  out += line;
  for (const auto &[kind, k] : by) {
    char page[256] = "";
    if (k.pages)
      std::snprintf(page, sizeof page, ", %.2f us a page; a warp %.0f%% waiting for pages (%.0f%% for their issue), %.0f%% computing them, "
                    "%.0f%% at the closing barrier; the row op before %.0f%%; ring full %.0f%%; thread 0: %.0f%% in the "
                    "product, %.0f%% after it",
                    k.work / double(k.pages), k.cycles > 0 ? 100 * k.starved / k.cycles : 0.0,
                    k.cycles > 0 ? 100 * k.unissued / k.cycles : 0.0,
                    k.cycles > 0 ? 100 * k.computing / k.cycles : 0.0, k.cycles > 0 ? 100 * k.closing / k.cycles : 0.0,
                    k.cycles > 0 ? 100 * k.prologue / k.cycles : 0.0, k.cycles > 0 ? 100 * k.issuing / k.cycles : 0.0,
                    k.cycles > 0 ? 100 * (k.routine - k.prologue) / k.cycles : 0.0,
                    k.cycles > 0 ? 100 * (k.cycles - k.routine) / k.cycles : 0.0);
    std::snprintf(line, sizeof line, "  %-11s %6lld items, work %8.1f us (%.2f us an item%s), waits %8.1f us\n",
                  kind.c_str(), static_cast<long long>(k.items), k.work, k.work / double(std::max<int64_t>(k.items, 1)),
                  page, k.wait);
    out += line;
  }
  return out;
}

} // namespace genrt
