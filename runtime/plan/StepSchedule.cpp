#include "runtime/plan/StepSchedule.h"

#include "runtime/json/Json.h"
#include "runtime/plan/Program.h"

#include <algorithm>
#include <sstream>

namespace genrt {

const char *stepOpKindName(StepOpKind k) {
  switch (k) {
  case StepOpKind::Matvec:
    return "matvec";
  case StepOpKind::Rows:
    return "rows";
  case StepOpKind::AttnDecode:
    return "attn_decode";
  case StepOpKind::AttnMerge:
    return "attn_merge";
  }
  return "?";
}

int64_t StepSchedule::rowsPerPage(const StepOp &op) const {
  if (op.kind != StepOpKind::Matvec || op.rowBytes <= 0)
    return 0;
  // At most 64 outputs a page: a CUDA-core product's warps finish a page's
  // outputs (and its GLU's two rows an output) in one pass.
  return std::min<int64_t>(64, pageBytes / (op.rowBytes * (op.after >= 0 ? 2 : 1)));
}

int64_t StepSchedule::itemPages(const StepItem &it) const {
  const StepOp &op = ops[static_cast<size_t>(it.op)];
  const int64_t rpp = rowsPerPage(op);
  return op.kind == StepOpKind::Matvec && rpp > 0 ? (it.count + rpp - 1) / rpp : 0;
}

int64_t StepSchedule::itemBytes(const StepItem &it) const {
  const StepOp &op = ops[static_cast<size_t>(it.op)];
  return op.kind == StepOpKind::Matvec ? int64_t(it.count) * op.rowBytes * (op.after >= 0 ? 2 : 1) : 0;
}

namespace {

const char *irKindOf(StepOpKind k) {
  switch (k) {
  case StepOpKind::Matvec:
    return "matmul";
  case StepOpKind::Rows:
    return "fused";
  default:
    return "kv_attention";
  }
}

std::string what(const StepSchedule &s, int32_t op) {
  return op >= 0 && op < static_cast<int32_t>(s.ops.size()) && !s.ops[size_t(op)].name.empty()
             ? "step op " + std::to_string(op) + " (" + s.ops[size_t(op)].name + ")"
             : "step op " + std::to_string(op);
}

Status checkOp(const StepSchedule &s, size_t i, const Program &decode, const std::vector<Tensor> &weights,
               const std::vector<int64_t> &itemsOf) {
  const StepOp &o = s.ops[i];
  auto bad = [&](const std::string &m) { return Status::error("step schedule: " + what(s, int32_t(i)) + ": " + m); };
  if (o.kind < StepOpKind::Matvec || o.kind > StepOpKind::AttnMerge)
    return bad("an unknown kind");
  const int32_t nops = static_cast<int32_t>(decode.ops.size());
  if (o.op < 0 || o.op >= nops)
    return bad("names @decode_step op " + std::to_string(o.op) + " of " + std::to_string(nops));
  const OpInfo &ir = decode.ops[size_t(o.op)];
  if (ir.kind != irKindOf(o.kind))
    return bad("a " + std::string(stepOpKindName(o.kind)) + " of a " + ir.kind + " op");
  for (int32_t f : {o.before, o.after})
    if (f != -1 && (o.kind != StepOpKind::Matvec || f < 0 || f >= nops || decode.ops[size_t(f)].kind != "fused"))
      return bad("a prologue or epilogue that is not a fused op of @decode_step");
  if (o.units <= 0 || o.units > (int64_t(1) << 31))
    return bad("units " + std::to_string(o.units));
  if (o.kind == StepOpKind::Matvec) {
    if (ir.operands.size() < 2)
      return bad("a matmul without a weight");
    const ValueInfo &w = decode.values[size_t(ir.operands[1])];
    if (w.storage != Storage::Weight || w.index < 0 || w.index >= static_cast<int32_t>(weights.size()))
      return bad("a matmul whose second operand is not a weight");
    const Tensor &t = weights[size_t(w.index)];
    if (t.rank() != 2)
      return bad("a weight of rank " + std::to_string(t.rank()));
    // transpose_b: the weight is stored [N, K] (a tied embedding table).
    const bool tb = attrInt(ir.attrs, "transpose_b", 0) != 0;
    const int64_t K = t.shape()[tb ? 1 : 0], N = t.shape()[tb ? 0 : 1], el = int64_t(dtypeSize(t.dtype()));
    const int64_t outs = o.after >= 0 ? N / 2 : N;
    if ((o.after >= 0 && N % 2) || o.units != outs || o.rowBytes != K * el)
      return bad("rows of " + std::to_string(o.rowBytes) + " bytes, " + std::to_string(o.units) +
                 " outputs, for a weight [" + std::to_string(K) + ", " + std::to_string(N) + "]");
    if (o.rowBytes % 16 || s.rowsPerPage(o) < 1)
      return bad("weight rows of " + std::to_string(o.rowBytes) + " bytes do not fit pages of " +
                 std::to_string(s.pageBytes));
  }
  if (o.kind == StepOpKind::AttnDecode && (o.splits < 1 || o.splits > 4096))
    return bad(std::to_string(o.splits) + " splits");
  if (o.code < 0 || o.code >= s.codes)
    return bad("routine " + std::to_string(o.code) + " of the kernel's " + std::to_string(s.codes));
  if (o.waits.size() > 6)
    return bad(std::to_string(o.waits.size()) + " waits (the kernel takes 6)");
  for (const StepWait &w : o.waits) {
    if (w.counter < 0 || w.counter >= static_cast<int32_t>(s.ops.size()) || w.counter == int32_t(i))
      return bad("waits on counter " + std::to_string(w.counter));
    if (w.need != itemsOf[size_t(w.counter)])
      return bad("waits for " + std::to_string(w.need) + " items of " + what(s, w.counter) + ", which has " +
                 std::to_string(itemsOf[size_t(w.counter)]));
  }
  return Status::ok();
}

// Each op's items cover its work exactly once.
Status checkCover(const StepSchedule &s, size_t i, const std::vector<const StepItem *> &items) {
  const StepOp &o = s.ops[i];
  auto bad = [&](const std::string &m) { return Status::error("step schedule: " + what(s, int32_t(i)) + ": " + m); };
  if (items.empty())
    return bad("has no items");
  switch (o.kind) {
  case StepOpKind::Matvec:
  case StepOpKind::AttnMerge: {
    std::vector<std::pair<int64_t, int64_t>> r;
    for (const StepItem *it : items) {
      if (it->first < 0 || it->count < 1 || int64_t(it->first) + it->count > o.units)
        return bad("an item of units [" + std::to_string(it->first) + ", +" + std::to_string(it->count) +
                   ") outside [0, " + std::to_string(o.units) + ")");
      r.push_back({it->first, it->count});
    }
    std::sort(r.begin(), r.end());
    int64_t next = 0;
    for (const auto &[a, n] : r) {
      if (a != next)
        return bad("items overlap or leave a gap at unit " + std::to_string(std::min(a, next)));
      next = a + n;
    }
    if (next != o.units)
      return bad("items end at unit " + std::to_string(next) + " of " + std::to_string(o.units));
    return Status::ok();
  }
  case StepOpKind::Rows: {
    const int32_t n = items[0]->count;
    std::vector<char> seen(static_cast<size_t>(std::max(n, 1)), 0);
    for (const StepItem *it : items)
      if (it->count != n || it->first < 0 || it->first >= n || seen[size_t(it->first)]++)
        return bad("row items that are not the strides 0.." + std::to_string(n - 1) + " of " + std::to_string(n));
    if (static_cast<int32_t>(items.size()) != n)
      return bad(std::to_string(items.size()) + " row items for a stride of " + std::to_string(n));
    return Status::ok();
  }
  case StepOpKind::AttnDecode: {
    std::vector<char> seen(static_cast<size_t>(o.units * o.splits), 0);
    for (const StepItem *it : items)
      if (it->first < 0 || it->first >= o.units || it->count < 0 || it->count >= o.splits ||
          seen[size_t(it->first * o.splits + it->count)]++)
        return bad("a decode item (part " + std::to_string(it->first) + ", split " + std::to_string(it->count) +
                   ") outside the op or twice");
    if (static_cast<int64_t>(items.size()) != o.units * o.splits)
      return bad(std::to_string(items.size()) + " decode items for " + std::to_string(o.units) + " parts x " +
                 std::to_string(o.splits) + " splits");
    return Status::ok();
  }
  }
  return bad("an unknown kind");
}

// The kernel orders nothing but the waits: every value a step op reads that
// another step op writes must come from one it waits on, directly or through
// the ops those wait on; an attention merge waits on its decode partials.
Status checkDataWaits(const StepSchedule &s, const Program &decode) {
  const size_t n = s.ops.size();
  std::vector<std::vector<char>> before(n, std::vector<char>(n, 0)); // before[i][j]: i waits on j, transitively
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> stack;
    for (const StepWait &w : s.ops[i].waits)
      stack.push_back(w.counter);
    while (!stack.empty()) {
      const int32_t j = stack.back();
      stack.pop_back();
      if (before[i][size_t(j)])
        continue;
      before[i][size_t(j)] = 1;
      for (const StepWait &w : s.ops[size_t(j)].waits)
        stack.push_back(w.counter);
    }
  }
  auto irOps = [&](const StepOp &o) {
    std::vector<int32_t> r;
    for (int32_t x : {o.before, o.op, o.after})
      if (x >= 0 && x < static_cast<int32_t>(decode.ops.size()))
        r.push_back(x);
    return r;
  };
  std::vector<int32_t> writer(decode.values.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    if (s.ops[i].kind == StepOpKind::AttnDecode)
      continue; // its partials go to the merge, its k and v to the cache
    for (int32_t x : irOps(s.ops[i]))
      for (int32_t v : decode.ops[size_t(x)].results)
        if (v >= 0 && v < static_cast<int32_t>(writer.size()))
          writer[size_t(v)] = static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < n; ++i) {
    const StepOp &o = s.ops[i];
    for (int32_t x : irOps(o))
      for (int32_t v : decode.ops[size_t(x)].operands) {
        const int32_t w = v >= 0 && v < static_cast<int32_t>(writer.size()) ? writer[size_t(v)] : -1;
        if (w >= 0 && w != static_cast<int32_t>(i) && !before[i][size_t(w)])
          return Status::error("step schedule: " + what(s, int32_t(i)) + " reads value " + std::to_string(v) +
                               ", which " + what(s, w) + " writes, without waiting for it");
      }
    if (o.kind == StepOpKind::AttnMerge) {
      bool partials = false;
      for (size_t j = 0; j < n; ++j)
        partials |= s.ops[j].kind == StepOpKind::AttnDecode && s.ops[j].op == o.op && before[i][j];
      if (!partials)
        return Status::error("step schedule: " + what(s, int32_t(i)) + " does not wait for its decode partials");
    }
  }
  return Status::ok();
}

} // namespace

Status verifyStepSchedule(const StepSchedule &s, const Program &decode, const std::vector<Tensor> &weights) {
  if (s.empty())
    return Status::ok();
  auto bad = [](const std::string &m) { return Status::error("step schedule: " + m); };
  if (s.blocks < 1 || s.blocks > 4096 || (s.threads != 128 && s.threads != 224) || s.blocksPerSm < 1 || s.blocksPerSm > 4)
    return bad(std::to_string(s.blocks) + " blocks of " + std::to_string(s.threads) + " threads, " +
               std::to_string(s.blocksPerSm) + " an SM (the kernel runs 1..4096 blocks of 128 or 224 compute threads, 1 to 4 an SM)");
  if (s.pageBytes < 1024 || s.pageBytes > (int64_t(128) << 10) || s.pageBytes % 128 || s.pages < 2 || s.pages > 64 ||
      s.pageBytes * s.pages > (int64_t(224) << 10))
    return bad(std::to_string(s.pages) + " pages of " + std::to_string(s.pageBytes) + " bytes");
  if (s.maxRows < 1 || s.maxRows > kStepMaxRows)
    return bad("at most " + std::to_string(s.maxRows) + " rows (the kernel takes 1 to " +
               std::to_string(kStepMaxRows) + ")");
  const int64_t perBlock = stepSharedLimit(s.blocksPerSm);
  if (s.codes < 1 || s.codes > 4096 || s.sharedBytes < s.pageBytes * s.pages || s.sharedBytes > perBlock)
    return bad(std::to_string(s.codes) + " routines and " + std::to_string(s.sharedBytes) +
               " bytes of shared memory (the ring's " + std::to_string(s.pageBytes * s.pages) + " and at most " +
               std::to_string(perBlock) + " for " + std::to_string(s.blocksPerSm) + " blocks an SM)");
  std::vector<int64_t> itemsOf(s.ops.size(), 0);
  std::vector<std::vector<const StepItem *>> byOp(s.ops.size());
  for (size_t i = 0; i < s.items.size(); ++i) {
    const StepItem &it = s.items[i];
    if (it.op < 0 || it.op >= static_cast<int32_t>(s.ops.size()))
      return bad("item " + std::to_string(i) + " names step op " + std::to_string(it.op) + " of " +
                 std::to_string(s.ops.size()));
    ++itemsOf[size_t(it.op)];
    byOp[size_t(it.op)].push_back(&it);
  }
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (Status st = checkOp(s, i, decode, weights, itemsOf); !st)
      return st;
    if (Status st = checkCover(s, i, byOp[i]); !st)
      return st;
  }
  if (s.blockStart.size() != size_t(s.blocks) + 1 || s.blockStart.front() != 0 ||
      s.blockStart.back() != static_cast<int32_t>(s.order.size()))
    return bad("the blocks' lists do not span the order");
  for (size_t b = 0; b + 1 < s.blockStart.size(); ++b)
    if (s.blockStart[b] > s.blockStart[b + 1])
      return bad("block " + std::to_string(b) + "'s list ends before it starts");
  std::vector<char> listed(s.items.size(), 0);
  for (int32_t i : s.order)
    if (i < 0 || i >= static_cast<int32_t>(s.items.size()) || listed[size_t(i)]++)
      return bad("the blocks' lists name item " + std::to_string(i) + " twice or past the items");
  if (s.order.size() != s.items.size())
    return bad(std::to_string(s.items.size() - s.order.size()) + " items are in no block's list");
  if (Status st = checkDataWaits(s, decode); !st)
    return st;

  // The blocks run their lists in order, an item once its op's waits are
  // met: what the kernel does, with every item taking no time. Where no
  // block can move and some have items left, the kernel would wait forever.
  std::vector<int64_t> done(s.ops.size(), 0);
  std::vector<int32_t> at(s.blockStart.begin(), s.blockStart.end() - 1);
  for (bool moved = true; moved;) {
    moved = false;
    for (int32_t b = 0; b < s.blocks; ++b)
      for (; at[size_t(b)] < s.blockStart[size_t(b) + 1]; ++at[size_t(b)]) {
        const StepItem &it = s.items[size_t(s.order[size_t(at[size_t(b)])])];
        const StepOp &o = s.ops[size_t(it.op)];
        if (!std::all_of(o.waits.begin(), o.waits.end(),
                         [&](const StepWait &w) { return done[size_t(w.counter)] >= w.need; }))
          break;
        ++done[size_t(it.op)];
        moved = true;
      }
  }
  for (int32_t b = 0; b < s.blocks; ++b)
    if (at[size_t(b)] < s.blockStart[size_t(b) + 1]) {
      const int32_t i = s.order[size_t(at[size_t(b)])];
      const StepOp &o = s.ops[size_t(s.items[size_t(i)].op)];
      for (const StepWait &w : o.waits)
        if (done[size_t(w.counter)] < w.need)
          return bad("block " + std::to_string(b) + " would wait forever at item " + std::to_string(i) + " of " +
                     what(s, s.items[size_t(i)].op) + ": " + what(s, w.counter) + " reaches " +
                     std::to_string(done[size_t(w.counter)]) + " of " + std::to_string(w.need) +
                     " (a cycle, or items listed after their readers)");
    }
  return Status::ok();
}

std::string printStepSchedule(const StepSchedule &s, bool blocks) {
  std::ostringstream o;
  if (s.empty())
    return "step schedule: none (the decode step runs kernel by kernel)\n";
  int64_t bytes = 0;
  for (const StepItem &it : s.items)
    bytes += s.itemBytes(it);
  o << "step schedule: " << s.ops.size() << " ops, " << s.items.size() << " items over " << s.blocks << " blocks of "
    << s.threads << " threads and a copy warp" << (s.blocksPerSm > 1 ? ", " + std::to_string(s.blocksPerSm) + " an SM" : "") << "; " << s.pages << " pages of " << s.pageBytes << " bytes; " << s.sharedBytes
    << " shared bytes; " << s.codes << " routines; up to " << s.maxRows << " rows; " << bytes
    << " weight bytes a step\n";
  std::vector<int64_t> items(s.ops.size(), 0);
  for (const StepItem &it : s.items)
    ++items[size_t(it.op)];
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const StepOp &op = s.ops[i];
    o << "  op " << i << ": " << stepOpKindName(op.kind) << " %op" << op.op;
    if (op.before >= 0)
      o << " before %op" << op.before;
    if (op.after >= 0)
      o << " after %op" << op.after;
    o << " units " << op.units;
    if (op.kind == StepOpKind::Matvec)
      o << " row_bytes " << op.rowBytes << " rows_per_page " << s.rowsPerPage(op);
    if (op.kind == StepOpKind::AttnDecode)
      o << " splits " << op.splits;
    o << " code " << op.code << " items " << items[i] << " waits [";
    for (size_t w = 0; w < op.waits.size(); ++w)
      o << (w ? ", " : "") << "op" << op.waits[w].counter << ">=" << op.waits[w].need;
    o << "]: " << op.name << "\n";
  }
  if (blocks)
    for (int32_t b = 0; b < s.blocks; ++b) {
      int64_t wb = 0;
      o << "  block " << b << ":";
      for (int32_t k = s.blockStart[size_t(b)]; k < s.blockStart[size_t(b) + 1]; ++k) {
        const StepItem &it = s.items[size_t(s.order[size_t(k)])];
        wb += s.itemBytes(it);
        o << " " << it.op << ":" << it.first << "+" << it.count;
      }
      o << " (" << wb << " bytes)\n";
    }
  return o.str();
}

std::string stepScheduleJson(const StepSchedule &s) {
  using json::Value;
  auto ints = [](const std::vector<int64_t> &v) {
    std::vector<Value> a;
    for (int64_t x : v)
      a.push_back(Value::integer(x));
    return Value::array(std::move(a));
  };
  std::vector<Value> ops;
  for (const StepOp &o : s.ops) {
    std::vector<int64_t> waits;
    for (const StepWait &w : o.waits) {
      waits.push_back(w.counter);
      waits.push_back(w.need);
    }
    ops.push_back(Value::object({{"kind", Value::string(stepOpKindName(o.kind))},
                                 {"op", Value::integer(o.op)},
                                 {"before", Value::integer(o.before)},
                                 {"after", Value::integer(o.after)},
                                 {"layer", Value::integer(o.layer)},
                                 {"units", Value::integer(o.units)},
                                 {"row_bytes", Value::integer(o.rowBytes)},
                                 {"splits", Value::integer(o.splits)},
                                 {"code", Value::integer(o.code)},
                                 {"waits", ints(waits)},
                                 {"name", Value::string(o.name)}}));
  }
  std::vector<int64_t> items, order(s.order.begin(), s.order.end()), starts(s.blockStart.begin(), s.blockStart.end());
  for (const StepItem &it : s.items) {
    items.push_back(it.op);
    items.push_back(it.first);
    items.push_back(it.count);
  }
  return json::write(Value::object({{"blocks", Value::integer(s.blocks)},
                                    {"threads", Value::integer(s.threads)},
                                    {"blocks_per_sm", Value::integer(s.blocksPerSm)},
                                    {"page_bytes", Value::integer(s.pageBytes)},
                                    {"pages", Value::integer(s.pages)},
                                    {"max_rows", Value::integer(s.maxRows)},
                                    {"codes", Value::integer(s.codes)},
                                    {"shared_bytes", Value::integer(s.sharedBytes)},
                                    {"abi", Value::integer(s.abi)},
                                    {"ops", Value::array(std::move(ops))},
                                    {"items", ints(items)},
                                    {"order", ints(order)},
                                    {"block_start", ints(starts)}}));
}

Status parseStepSchedule(const json::Value &v, StepSchedule &out) {
  out = StepSchedule{};
  auto bad = [](const std::string &m) { return Status::error("step schedule: " + m); };
  auto i64 = [&](const json::Value &o, const char *k, int64_t &x) {
    const json::Value *f = o.isObject() ? o.find(k) : nullptr;
    if (!f || !f->isInteger())
      return false;
    x = f->asInt();
    return true;
  };
  auto i32 = [&](const json::Value &o, const char *k, int32_t &x) {
    int64_t y = 0;
    if (!i64(o, k, y) || y < INT32_MIN || y > INT32_MAX)
      return false;
    x = static_cast<int32_t>(y);
    return true;
  };
  auto array = [&](const json::Value &o, const char *k, std::vector<int32_t> &x) {
    const json::Value *f = o.isObject() ? o.find(k) : nullptr;
    if (!f || !f->isArray())
      return false;
    for (const json::Value &e : f->items()) {
      if (!e.isInteger() || e.asInt() < INT32_MIN || e.asInt() > INT32_MAX)
        return false;
      x.push_back(static_cast<int32_t>(e.asInt()));
    }
    return true;
  };
  if (!i32(v, "blocks", out.blocks) || !i32(v, "threads", out.threads) || !i64(v, "page_bytes", out.pageBytes) ||
      !i32(v, "pages", out.pages) || !i64(v, "max_rows", out.maxRows) || !i32(v, "codes", out.codes) ||
      !i64(v, "shared_bytes", out.sharedBytes))
    return bad("the header needs integer blocks, threads, page_bytes, pages, max_rows, codes and shared_bytes");
  if (v.find("blocks_per_sm") && !i32(v, "blocks_per_sm", out.blocksPerSm)) // absent in plans before it: one
    return bad("blocks_per_sm must be an integer");
  if (v.find("abi") && !i64(v, "abi", out.abi)) // absent in plans before it: 0, which no runner takes
    return bad("abi must be an integer");
  const json::Value *ops = v.find("ops");
  if (!ops || !ops->isArray())
    return bad("needs an array 'ops'");
  for (const json::Value &o : ops->items()) {
    StepOp op;
    const json::Value *kind = o.isObject() ? o.find("kind") : nullptr;
    const json::Value *name = o.isObject() ? o.find("name") : nullptr;
    std::vector<int32_t> waits;
    if (!kind || !kind->isString() || !name || !name->isString() || !i32(o, "op", op.op) ||
        !i32(o, "before", op.before) || !i32(o, "after", op.after) || !i32(o, "layer", op.layer) ||
        !i64(o, "units", op.units) || !i64(o, "row_bytes", op.rowBytes) || !i32(o, "splits", op.splits) ||
        !i32(o, "code", op.code) ||
        !array(o, "waits", waits) || waits.size() % 2)
      return bad("op " + std::to_string(out.ops.size()) + " lacks a field or has one of the wrong type");
    bool known = false;
    for (StepOpKind k : {StepOpKind::Matvec, StepOpKind::Rows, StepOpKind::AttnDecode, StepOpKind::AttnMerge})
      if (kind->asString() == stepOpKindName(k)) {
        op.kind = k;
        known = true;
      }
    if (!known)
      return bad("op " + std::to_string(out.ops.size()) + " has the unknown kind '" + kind->asString() + "'");
    for (size_t w = 0; w < waits.size(); w += 2)
      op.waits.push_back({waits[w], waits[w + 1]});
    op.name = name->asString();
    out.ops.push_back(std::move(op));
  }
  std::vector<int32_t> items;
  if (!array(v, "items", items) || items.size() % 3 || !array(v, "order", out.order) ||
      !array(v, "block_start", out.blockStart))
    return bad("needs integer arrays 'items' (three a item), 'order' and 'block_start'");
  for (size_t i = 0; i < items.size(); i += 3)
    out.items.push_back({items[i], items[i + 1], items[i + 2]});
  return Status::ok();
}

} // namespace genrt
