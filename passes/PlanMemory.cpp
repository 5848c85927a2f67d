// plan-memory: one arena per function from liveness at the maximum shapes.
//
// Each op result gets a buffer live from its op to its last use (function
// outputs to the end). Buffers are placed largest first, each into the
// smallest gap that fits among the already-placed buffers it is live with
// (greedy by size, best gap; LightSeq / TFLite style). Offsets go on the ops
// as `arena_offsets` (one per result), each buffer sized in the value's
// storage dtype (passes/analysis/Storage.h: f16 activations take half); the
// arena size and the maximum symbol values go into the module metadata for
// the plan writer, and into an Analysis remark per function.
//
// A view (reshape, flatten, squeeze, unsqueeze) of a value that has a buffer
// shares that buffer: the bytes are already laid out as the view reads them,
// so the executors have nothing to copy (each skips a view whose source is
// its destination), and the one buffer lives until the last use of either.
// GPT-2's Conv1D exports reshape around every projection: before this, 2-3
// copies a layer-step, each a launch in the decode graph.
#include "compiler/ir/Symbols.h"
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "passes/analysis/Fusability.h"
#include "passes/analysis/GemvNeighbours.h"
#include "passes/analysis/PlanOptions.h"
#include "passes/analysis/Storage.h"

#include <algorithm>
#include <map>

namespace genc {
namespace {

constexpr int64_t kAlign = 64;

struct Buffer {
  Value *value;
  int64_t bytes, first, last, offset = -1;
};

llvm::Error planFunction(Module &m, Function &f, const std::map<std::string, int64_t> &maxSyms,
                         DType activation) {
  std::vector<Buffer> bufs;
  std::map<const Value *, size_t> index;
  int64_t pos = 0;
  Op *prev = nullptr, *prevPrev = nullptr;
  for (auto &op : f.ops()) {
    for (Value *v : op->operands())
      if (auto it = index.find(v); it != index.end())
        bufs[it->second].last = pos;
    // A matmul that alone reads a row kernel's result right before it may
    // run that kernel's row itself, in each of its blocks (the GPU's
    // one-row GEMV, codegen/GemvKernels.cpp): the kernel's operands and
    // results stay live through the matmul, so its result never lands on
    // what a later block still reads. In @decode_step only: elsewhere one
    // row is rare, the arena is large, and the executor declines the fusion
    // where buffers meet.
    const bool decode = f.name() == "decode_step"; // where one-row runs are the rule
    if (decode && gemvMayRunBefore(f, prev, op.get())) {
      for (Value *v : prev->operands())
        if (auto it = index.find(v); it != index.end())
          bufs[it->second].last = std::max(bufs[it->second].last, pos);
      for (Value *v : prev->results())
        if (auto it = index.find(v); it != index.end())
          bufs[it->second].last = std::max(bufs[it->second].last, pos);
    }
    // Likewise an elementwise body that alone reads a matmul's product
    // right before it (a GLU: the GEMV writes the body's result, reading
    // its own a, or the row kernel's operands and results before it).
    if (decode && gemvMayRunAfter(f, prev, op.get())) {
      std::vector<Value *> reads(prev->operands().begin(), prev->operands().end());
      if (gemvMayRunBefore(f, prevPrev, prev)) {
        const auto &ins = prevPrev->operands();
        const auto outs = prevPrev->results();
        reads.insert(reads.end(), ins.begin(), ins.end());
        reads.insert(reads.end(), outs.begin(), outs.end());
      }
      for (Value *v : reads)
        if (auto it = index.find(v); it != index.end())
          bufs[it->second].last = std::max(bufs[it->second].last, pos);
    }
    prevPrev = prev;
    prev = op.get();
    const bool view = isView(*op) && op->numResults() == 1;
    for (Value *r : op->results()) {
      auto shape = evaluateShape(r->shape(), maxSyms);
      if (!shape)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "plan-memory: @%s: the size of a result of '%s' at \"%s\" "
                                       "(%s) is not bounded by the plan's maximum shapes",
                                       f.name().c_str(), op->kind().c_str(), op->loc().c_str(),
                                       r->type().str().c_str());
      int64_t n = 1;
      for (int64_t d : *shape)
        n *= d;
      const DType stored = storageDType(f, r, activation);
      int64_t bytes = std::max<int64_t>((n * static_cast<int64_t>(dtypeSize(stored)) + kAlign - 1) / kAlign * kAlign, kAlign);
      Value *src = view ? op->operand(0) : nullptr;
      if (auto it = src ? index.find(src) : index.end();
          it != index.end() && storageDType(f, src, activation) == stored) {
        // Its shape's bound may evaluate larger than the source's (other
        // symbols): the shared buffer holds the larger.
        index[r] = it->second;
        bufs[it->second].bytes = std::max(bufs[it->second].bytes, bytes);
        continue;
      }
      index[r] = bufs.size();
      bufs.push_back({r, bytes, pos, pos});
    }
    ++pos;
  }
  for (auto &o : f.outputs())
    if (auto it = index.find(o.value); it != index.end())
      bufs[it->second].last = pos;

  std::vector<size_t> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; });
  int64_t arena = 0;
  std::vector<size_t> placed;
  for (size_t i : order) {
    Buffer &b = bufs[i];
    std::vector<std::pair<int64_t, int64_t>> busy; // [offset, end) of overlapping live buffers
    for (size_t j : placed) {
      const Buffer &o = bufs[j];
      if (o.first <= b.last && b.first <= o.last)
        busy.push_back({o.offset, o.offset + o.bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [start, end] : busy) {
      if (start - cursor >= b.bytes && start - cursor < bestGap) {
        best = cursor;
        bestGap = start - cursor;
      }
      cursor = std::max(cursor, end);
    }
    b.offset = best >= 0 ? best : cursor;
    arena = std::max(arena, b.offset + b.bytes);
    placed.push_back(i);
  }
  for (auto &op : f.ops()) {
    if (!op->numResults())
      continue;
    std::vector<int64_t> offs;
    for (Value *r : op->results())
      offs.push_back(bufs[index[r]].offset);
    op->setAttr("arena_offsets", offs);
  }
  std::string at;
  for (auto &[s, v] : maxSyms)
    at += (at.empty() ? "" : ", ") + s + " = " + std::to_string(v);
  Remarks(m, "plan-memory").analysis("ArenaSize", f)
      << "arena of " << arg("Bytes", arena) << " bytes for " << arg("Buffers", int64_t(bufs.size()))
      << " buffers at " << arg("MaxShapes", at);
  m.metadata()["arena." + f.name() + ".bytes"] = std::to_string(arena);
  for (auto &[s, v] : maxSyms)
    m.metadata()["arena." + f.name() + ".max." + s] = std::to_string(v);
  return llvm::Error::success();
}

} // namespace

llvm::Error planMemoryPass(Module &m) {
  PlanOptions o = planOptions(m);
  for (auto &f : m.functions()) {
    std::map<std::string, int64_t> maxSyms;
    if (f->name() == "prefill")
      maxSyms = {{"tokens", o.prefillTokens()}, {"rows", o.slots()}};
    else if (f->name() == "decode_step")
      maxSyms = {{"tokens", o.slots()}};
    else if (f->name() == "encode") // sources packed like a prefill
      maxSyms = {{"src_tokens", std::max(o.prefillTokens(), o.sourceLength())}};
    else
      continue;
    if (auto e = planFunction(m, *f, maxSyms, o.activation))
      return e;
  }
  return llvm::Error::success();
}

} // namespace genc
