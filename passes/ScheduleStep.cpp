// schedule-step: @decode_step as the work items of one persistent kernel a
// step (runtime/plan/StepSchedule.h: what the schedule is; codegen/StepKernel.cpp
// emits the kernel; runtime/cuda runs it).
//
// Each op of @decode_step becomes a step op: a matmul a Matvec (the fused row
// op right before it that it alone reads from, and the GLU right after it
// that alone reads it, inside: one-row GEMV fusion's pairs), a fused op left
// on its own a Rows op, a self-attention a decode op (a KV head and a split
// of its keys an item) and a merge op (a query head an item). A Matvec's
// outputs split into as many items as there are blocks (at most), each a run
// of whole weight rows; every op waits for the ops whose results it reads and
// for the earlier ops whose buffers it overwrites (the decode arena reuses
// them), reduced to the waits no other wait implies. Items go to blocks in
// program order, each to the block with the fewest weight bytes so far: a
// block's list is its items in the order the step runs, and the weight bytes
// a step streams are shared out evenly.
//
// Where the kernel cannot run the step (an op of another kind, f32
// activations, an encoder-decoder, a weight row wider than a page), the plan
// keeps the kernel-per-op path and a Missed remark says why; the step then
// carries no schedule. The schedule goes to the plan writer as JSON in the
// module's metadata ("step.schedule").
#include "compiler/ir/Metadata.h"
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "passes/analysis/Fusability.h"
#include "passes/analysis/GemvNeighbours.h"
#include "passes/analysis/PlanOptions.h"
#include "runtime/plan/StepSchedule.h"
#include "runtime/Env.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace genc {
namespace {

using genrt::StepItem;
using genrt::StepOp;
using genrt::StepOpKind;
using genrt::StepSchedule;
using genrt::StepWait;

constexpr int64_t kMinPageBytes = 16 << 10;  // a page: at least this, at least a weight row (two with a GLU)
constexpr int64_t kSmallPageBytes = 8 << 10; // ... or this where it holds two of the widest rows
constexpr int64_t kMaxPageBytes = 64 << 10;
constexpr int64_t kRingBytes = 160 << 10;    // the rest of a block's 227 KB: staged rows, attention tiles

int64_t offsetOf(const Op &op, size_t result) {
  std::vector<int64_t> o = op.intsAttr("arena_offsets");
  return result < o.size() ? o[result] : -1;
}

// The buffers ops name: the value a view reads through to (a view of a value
// with a buffer shares it: plan-memory), its offset and its bytes.
struct Buffers {
  std::map<const Value *, const Value *> base;
  const Value *of(const Value *v) const {
    auto it = base.find(v);
    return it == base.end() ? v : it->second;
  }
};

struct Unit {
  StepOp op;
  std::vector<const Value *> reads, writes;
  std::vector<StepItem> items;
  std::vector<int64_t> cost; // a block's share of the step per item (weight bytes)
};

class Scheduler {
public:
  Scheduler(Module &m, Function &f, DType activation)
      : m_(m), f_(f), activation_(activation), R_(m, "schedule-step") {}

  // The step ops, or false (with a remark) where the kernel cannot run the step.
  bool build() {
    std::vector<Op *> ops;
    for (auto &o : f_.ops())
      ops.push_back(o.get());
    for (size_t i = 0; i < ops.size(); ++i) {
      Op *op = ops[i], *prev = i ? ops[i - 1] : nullptr, *next = i + 1 < ops.size() ? ops[i + 1] : nullptr;
      index_[op] = static_cast<int32_t>(i);
      if (op->is("dims") || op->is("constant"))
        continue;
      if (isView(*op)) {
        if (offsetOf(*op, 0) != -1 && op->operand(0)->definingOp() &&
            offsetOf(*op->operand(0)->definingOp(), op->operand(0)->resultIndex()) == offsetOf(*op, 0)) {
          buffers_.base[op->result(0)] = buffers_.of(op->operand(0));
          continue;
        }
        if (op->operand(0)->isArgument()) {
          buffers_.base[op->result(0)] = op->operand(0);
          continue;
        }
        return refuse(op, "a view that copies its operand");
      }
      if (op->is("fused") && gemvMayRunBefore(f_, op, next) && matvecTakes(next))
        continue; // the prologue of the matmul after it
      if (op->is("fused") && prev && gemvGluAfter(m_, f_, prev, op) && matvecTakes(prev))
        continue; // the epilogue of the matmul before it
      if (op->is("matmul")) {
        if (!matvecTakes(op))
          return refuse(op, "a matmul whose second operand is not a 2-D weight");
        addMatvec(op, gemvMayRunBefore(f_, prev, op) ? prev : nullptr,
                  next && gemvGluAfter(m_, f_, op, next) ? next : nullptr);
        continue;
      }
      if (op->is("fused")) { // a row op, or an elementwise one that no product takes (one block, every element)
        addRows(op, op->strAttr("pattern", "") == "reduction" ? "fused row op" : "fused elementwise op");
        continue;
      }
      if (op->is("kv_attention")) {
        addAttention(op);
        continue;
      }
      return refuse(op, "a " + op->kind() + " op");
    }
    return !units_.empty();
  }

  // Waits, items and the blocks' lists.
  StepSchedule schedule(int64_t blocks, int64_t perSm, int64_t warps, int64_t maxRows) {
    wire();
    StepSchedule s;
    s.blocks = static_cast<int32_t>(blocks);
    s.blocksPerSm = static_cast<int32_t>(perSm);
    s.threads = static_cast<int32_t>(32 * warps);
    s.maxRows = maxRows;
    int64_t widest = 0;
    for (const Unit &u : units_)
      if (u.op.kind == StepOpKind::Matvec)
        widest = std::max(widest, u.op.rowBytes * (u.op.after >= 0 ? 2 : 1));
    // Small rows take half pages: twice the ring's slots, an item's rows over
    // more of the warps (the SmolLM2-135M shape, rows of at most 3 KiB:
    // 1.087 ms/token against 1.158 on 16 KiB; the 1.1B's 11 KiB rows on 8
    // KiB pages, one row a page: 0.376 against 0.346; one H200, 2026-12-04).
    // GENC_STEP_PAGE_KB (A/B runs): another least page.
    const int64_t fit = 2 * widest <= kSmallPageBytes ? kSmallPageBytes : kMinPageBytes;
    const int64_t least = int64_t(genrt::env::choice("GENC_STEP_PAGE_KB", {8, 16, 32}, int(fit >> 10))) << 10;
    s.pageBytes = std::max(least, (widest + 127) / 128 * 128);
    s.pages = static_cast<int32_t>(std::max<int64_t>(2, kRingBytes / perSm / s.pageBytes));
    // GENC_STEP_PAGES_MAX (A/B runs): fewer pages a block, so fewer bytes in
    // flight across the GPU (132 blocks x 9 x 16 KiB is 19 MB queued, ~6 us
    // at the copy bandwidth) — does the queue lengthen every dependent load,
    // poll and release fence between items?
    if (const int cap = genrt::env::choice("GENC_STEP_PAGES_MAX", {2, 3, 4, 5, 6, 8}, 0); cap > 0)
      s.pages = std::min<int32_t>(s.pages, cap);
    std::vector<int64_t> load(static_cast<size_t>(blocks), 0);
    std::vector<std::vector<int32_t>> lists(static_cast<size_t>(blocks));
    for (size_t ui = 0; ui < units_.size(); ++ui) {
      Unit &u = units_[ui];
      tile(u, blocks);
      s.ops.push_back(u.op);
      // Largest first, each to the least loaded block (the lowest index of
      // equals): the lists stay in program order, the bytes even.
      std::vector<size_t> idx(u.items.size());
      for (size_t k = 0; k < idx.size(); ++k)
        idx[k] = k;
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return u.cost[a] > u.cost[b]; });
      std::vector<char> taken(static_cast<size_t>(blocks), 0);
      for (size_t k : idx) {
        int64_t best = -1;
        for (int64_t b = 0; b < blocks; ++b) // one item an op a block where there are enough blocks
          if ((!taken[size_t(b)] || static_cast<int64_t>(u.items.size()) > blocks) &&
              (best < 0 || load[size_t(b)] < load[size_t(best)]))
            best = b;
        taken[size_t(best)] = 1;
        load[size_t(best)] += u.cost[k];
        lists[size_t(best)].push_back(static_cast<int32_t>(s.items.size()));
        s.items.push_back(u.items[k]);
      }
    }
    s.blockStart.push_back(0);
    for (const auto &l : lists) {
      s.order.insert(s.order.end(), l.begin(), l.end());
      s.blockStart.push_back(static_cast<int32_t>(s.order.size()));
    }
    return s;
  }

  int64_t widestRow() const {
    int64_t w = 0;
    for (const Unit &u : units_)
      if (u.op.kind == StepOpKind::Matvec)
        w = std::max(w, u.op.rowBytes * (u.op.after >= 0 ? 2 : 1));
    return w;
  }
  bool refuse(const Op *op, const std::string &why) {
    R_.missed("StepKernelNotUsed", f_, op) << "the decode step keeps one kernel per op: " << why;
    return false;
  }
  void tagOps() {
    std::vector<Op *> ops;
    for (auto &o : f_.ops())
      ops.push_back(o.get());
    for (size_t i = 0; i < units_.size(); ++i) {
      Op *op = ops[size_t(units_[i].op.op)];
      op->setAttr(units_[i].op.kind == StepOpKind::AttnMerge ? "step_merge_op" : "step_op", static_cast<int64_t>(i));
    }
  }

private:
  static bool matvecTakes(const Op *op) {
    return op && op->is("matmul") && op->numOperands() >= 2 && op->operand(1)->isWeight() &&
           op->operand(1)->shape().size() == 2 && op->operand(1)->shape()[0].isConstant() &&
           op->operand(1)->shape()[1].isConstant();
  }

  static std::string name(const Op *op, const std::string &what) {
    std::string n = what;
    if (int64_t l = layerOf(op); l >= 0)
      n = "layer " + std::to_string(l) + " " + n;
    return n + " at \"" + op->loc() + "\"";
  }

  void addMatvec(Op *mm, Op *before, Op *after) {
    Unit u;
    const Value *w = mm->operand(1);
    // transpose_b: the weight is stored [N, K] (a tied embedding table).
    const bool tb = mm->intAttr("transpose_b", 0) != 0;
    const int64_t K = w->shape()[tb ? 1 : 0].constant(), N = w->shape()[tb ? 0 : 1].constant();
    u.op.kind = StepOpKind::Matvec;
    u.op.op = index_[mm];
    u.op.before = before ? index_[before] : -1;
    u.op.after = after ? u.op.op + 1 : -1; // the op right after it
    u.op.units = after ? N / 2 : N;
    // Float weights are stored as the plan's activations (genc --dtype casts
    // them after the passes).
    const DType stored = isFloat(w->dtype()) && activation_ != DType::F32 ? activation_ : w->dtype();
    u.op.rowBytes = K * static_cast<int64_t>(dtypeSize(stored));
    u.op.layer = static_cast<int32_t>(layerOf(mm));
    u.op.name = name(mm, std::string(before ? "row op + " : "") + "matmul" + (after ? " + GLU" : ""));
    if (before) {
      for (Value *v : before->operands())
        u.reads.push_back(v);
      for (size_t r = 0; r < before->numResults(); ++r)
        if (before->result(r) != mm->operand(0))
          u.writes.push_back(before->result(r)); // written by the op's first item
    } else {
      u.reads.push_back(mm->operand(0));
    }
    u.writes.push_back(after ? after->result(0) : mm->result(0));
    units_.push_back(std::move(u));
  }

  void addRows(Op *op, const char *what) {
    Unit u;
    u.op.kind = StepOpKind::Rows;
    u.op.op = index_[op];
    u.op.units = 1; // one item takes every row of the step (the body loops over rows)
    u.op.layer = static_cast<int32_t>(layerOf(op));
    u.op.name = name(op, what);
    for (Value *v : op->operands())
      u.reads.push_back(v);
    for (size_t r = 0; r < op->numResults(); ++r)
      u.writes.push_back(op->result(r));
    units_.push_back(std::move(u));
  }

  void addAttention(Op *op) {
    Unit d, mg;
    d.op.kind = StepOpKind::AttnDecode;
    d.op.op = index_[op];
    d.op.units = op->intAttr("num_kv_heads", 0);
    d.op.layer = static_cast<int32_t>(op->intAttr("layer", -1));
    d.op.name = name(op, "attention decode");
    for (Value *v : op->operands())
      d.reads.push_back(v);
    d.writes.push_back(op->result(0)); // a token whose keys take one split
    mg.op.kind = StepOpKind::AttnMerge;
    mg.op.op = d.op.op;
    mg.op.units = op->intAttr("num_heads", 0);
    mg.op.layer = d.op.layer;
    mg.op.name = name(op, "attention merge");
    mg.writes.push_back(op->result(0));
    merges_[units_.size() + 1] = units_.size(); // the merge reads its decode's partials
    units_.push_back(std::move(d));
    units_.push_back(std::move(mg));
  }

  // The model layer an op belongs to, for messages: the attention op's own,
  // or the first ".N" after "layers" / "h" / "blocks" / "layer" in the ONNX
  // node's name ("/m/model/layers.3/mlp/down_proj/MatMul").
  static int64_t layerOf(const Op *op) {
    if (int64_t l = op->intAttr("layer", -1); l >= 0)
      return l;
    static const std::regex layer(R"((?:layers|layer|blocks|h)[._/](\d+)(?:[/._]|$))");
    std::smatch mt;
    const std::string loc = op->loc();
    return std::regex_search(loc, mt, layer) ? std::stoll(mt[1].str()) : -1;
  }

  // Waits: on the ops whose results an op reads, and on earlier ops whose
  // buffers it overwrites or that read what it overwrites; then only those
  // no other wait implies.
  void wire() {
    std::map<const Value *, size_t> producer;
    std::vector<std::set<size_t>> anc(units_.size()), direct(units_.size());
    auto bytesOf = [&](const Value *v) -> std::pair<int64_t, int64_t> {
      const Value *b = buffers_.of(v);
      const Op *d = b->definingOp();
      if (!d)
        return {-1, 0};
      const int64_t off = offsetOf(*d, b->resultIndex());
      const int64_t n = static_cast<int64_t>(dtypeSize(b->dtype())) * maxElements(b);
      return {off, n};
    };
    auto overlap = [&](const Value *a, const Value *b) {
      auto [oa, na] = bytesOf(a);
      auto [ob, nb] = bytesOf(b);
      return oa >= 0 && ob >= 0 && oa < ob + nb && ob < oa + na;
    };
    for (size_t i = 0; i < units_.size(); ++i) {
      Unit &u = units_[i];
      for (const Value *r : u.reads)
        if (auto it = producer.find(buffers_.of(r)); it != producer.end())
          direct[i].insert(it->second);
      if (auto mg = merges_.find(i); mg != merges_.end())
        direct[i].insert(mg->second);
      for (size_t j = 0; j < i; ++j) { // write after read / write
        bool clash = false;
        for (const Value *w : u.writes) {
          for (const Value *r : units_[j].reads)
            clash |= overlap(w, r) && buffers_.of(w) != buffers_.of(r);
          for (const Value *w2 : units_[j].writes)
            clash |= overlap(w, w2) && buffers_.of(w) != buffers_.of(w2);
        }
        if (clash)
          direct[i].insert(j);
      }
      for (size_t j : direct[i]) {
        anc[i].insert(j);
        anc[i].insert(anc[j].begin(), anc[j].end());
      }
      for (const Value *w : u.writes)
        producer[buffers_.of(w)] = i;
    }
    for (size_t i = 0; i < units_.size(); ++i)
      for (size_t j : direct[i]) {
        bool implied = false;
        for (size_t k : direct[i])
          implied |= k != j && anc[k].count(j);
        if (!implied)
          units_[i].op.waits.push_back({static_cast<int32_t>(j), 0}); // need: once the items are known
      }
  }

  int64_t maxElements(const Value *v) const {
    int64_t n = 1;
    for (const Dim &d : v->shape())
      n *= d.isConstant() ? d.constant() : 1; // tokens: one a step (the kernel's runs)
    return n;
  }

  void tile(Unit &u, int64_t blocks) {
    switch (u.op.kind) {
    case StepOpKind::Matvec: {
      const int64_t n = std::min(u.op.units, blocks);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t a = k * u.op.units / n, b = (k + 1) * u.op.units / n;
        u.items.push_back({0, static_cast<int32_t>(a), static_cast<int32_t>(b - a)});
        u.cost.push_back((b - a) * u.op.rowBytes * (u.op.after >= 0 ? 2 : 1));
      }
      break;
    }
    case StepOpKind::Rows:
      u.items.push_back({0, 0, 1});
      u.cost.push_back(0);
      break;
    case StepOpKind::AttnDecode:
      u.op.splits = static_cast<int32_t>(std::clamp<int64_t>(blocks / std::max<int64_t>(1, u.op.units), 1, 64));
      for (int64_t h = 0; h < u.op.units; ++h)
        for (int32_t z = 0; z < u.op.splits; ++z) {
          u.items.push_back({0, static_cast<int32_t>(h), z});
          u.cost.push_back(0);
        }
      break;
    case StepOpKind::AttnMerge:
      for (int64_t h = 0; h < u.op.units; ++h) {
        u.items.push_back({0, static_cast<int32_t>(h), 1});
        u.cost.push_back(0);
      }
      break;
    }
    const int32_t self = static_cast<int32_t>(&u - units_.data());
    for (StepItem &it : u.items)
      it.op = self;
    for (StepWait &w : u.op.waits)
      w.need = static_cast<int32_t>(units_[size_t(w.counter)].items.size());
  }

  Module &m_;
  Function &f_;
  DType activation_;
  Remarks R_;
  Buffers buffers_;
  std::map<const Op *, int32_t> index_;
  std::vector<Unit> units_;
  std::map<size_t, size_t> merges_; // merge unit -> its decode unit
};

} // namespace

llvm::Error scheduleStepPass(Module &m) {
  Function *f = m.function("decode_step");
  if (!f)
    return llvm::Error::success();
  m.metadata().erase("step.schedule");
  Remarks R(m, "schedule-step");
  // A plan-wide choice (no step kernel asked for, f32, an encoder-decoder) is
  // an Analysis remark; a model the kernel could take but for one of its ops
  // is a Missed one.
  const PlanOptions opts = planOptions(m);
  const int64_t blocks = metadataInt(m, "plan.step_blocks").value_or(kDefaultStepBlocks);
  const int64_t perSm = std::clamp<int64_t>(metadataInt(m, "plan.step_blocks_per_sm").value_or(1), 1, 4);
  // 4 or 7 compute warps: with the copy warp, blocks of 160 or 256 threads
  // (a block of 288 would leave 168 registers a thread, and the 8-warp
  // kernel spilled)
  const int64_t warps = metadataInt(m, "plan.step_warps").value_or(7) == 4 ? 4 : 7;
  if (blocks <= 0) {
    R.analysis("StepKernelNotUsed", *f, nullptr) << "the decode step keeps one kernel per op: step_blocks is 0";
    return llvm::Error::success();
  }
  if (opts.activation != DType::F16 && opts.activation != DType::BF16) {
    R.analysis("StepKernelNotUsed", *f, nullptr)
        << "the decode step keeps one kernel per op: the step kernel runs f16 and bf16 plans ("
        << dtypeName(opts.activation) << " here)";
    return llvm::Error::success();
  }
  if (m.function("encode")) {
    R.analysis("StepKernelNotUsed", *f, nullptr)
        << "the decode step keeps one kernel per op: an encoder-decoder (its cross-attention)";
    return llvm::Error::success();
  }
  Scheduler s(m, *f, opts.activation);
  if (!s.build())
    return llvm::Error::success();
  if (s.widestRow() > kMaxPageBytes) {
    R.missed("StepKernelNotUsed", *f, nullptr) << "the decode step keeps one kernel per op: a weight row of "
                                               << arg("RowBytes", s.widestRow()) << " bytes exceeds a page of "
                                               << arg("PageBytes", kMaxPageBytes);
    return llvm::Error::success();
  }
  // Every row of a decode step up to the kernel's most: the plan's
  // sequences times their beams.
  StepSchedule sched =
      s.schedule(blocks, perSm, warps, std::clamp<int64_t>(opts.maxBatch * std::max<int64_t>(opts.maxBeams, 1), 1, genrt::kStepMaxRows));
  s.tagOps();
  m.metadata()["step.schedule"] = genrt::stepScheduleJson(sched);
  int64_t bytes = 0;
  for (const StepItem &it : sched.items)
    bytes += sched.itemBytes(it);
  R.passed("StepScheduled", *f, nullptr) << "the decode step runs as one kernel: " << arg("Ops", int64_t(sched.ops.size()))
                                         << " step ops, " << arg("Items", int64_t(sched.items.size())) << " items over "
                                         << arg("Blocks", blocks) << " blocks, " << arg("WeightBytes", bytes)
                                         << " weight bytes a step in pages of " << arg("PageBytes", sched.pageBytes);
  return llvm::Error::success();
}

} // namespace genc
