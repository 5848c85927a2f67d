// fuse: fewer, larger kernels between the GEMMs and attention (LightSeq).
//
// Runs after derive-plan on @prefill and @decode_step, in three steps:
//  1. Horizontal GEMM fusion: matmuls that read the same input with 2-D
//     weights [d, n_i] (Q/K/V, gate/up) become one matmul with the weights
//     concatenated along n, followed by a `split`.
//  2. Grouping: maximal connected chains of elementwise, injective and
//     normalisation ops (op patterns from OpDefs) become one `fused` op each.
//     Two ops join only if they sit behind the same number of GEMM/attention
//     ops ("anchor depth"): a path from one member to another through an
//     anchor would then raise the depth, so a group never depends on itself.
//     Cheap leaves (injective/elementwise ops over arguments, weights and
//     constants only, like the position-table gathers) are copied into each
//     group that reads them instead of being launched on their own; constants
//     and dims are copied likewise (they are host values, not kernels).
//  3. Epilogues: an `add` of a 1-D bias right after a matmul (and an
//     activation after it) is marked on the matmul (`epilogue`) for cuBLASLt.
//
// A group is `%r... = fused(%inputs...) {body = "NAME", pattern = ...}` and
// its ops move into a module function @NAME(inputs...) -> (results...): the
// CPU executor runs that body op by op with its own kernels (identical
// semantics), codegen turns it into one CUDA kernel. Weights a group reads are
// operands of the fused op, so the body only sees its arguments.
#include "compiler/ir/OpDefs.h"
#include "passes/Passes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>

namespace genc {
namespace {

OpPattern patternOf(const Op &op) {
  const OpDef *d = lookupOp(op.kind());
  return d ? d->pattern : OpPattern::Opaque;
}

bool isHostValue(const Op &op) { // computed at plan time, never a launch
  return patternOf(op) == OpPattern::Shape && op.numOperands() == 0;
}

bool isFusable(const Op &op) {
  switch (patternOf(op)) {
  case OpPattern::Elementwise:
  case OpPattern::Injective:
    return true;
  case OpPattern::Reduction: // norms and softmax over the last axis; not cumsum
    return !op.is("cumsum");
  default:
    return false;
  }
}

// ---- 1. horizontal GEMM fusion -------------------------------------------

std::shared_ptr<const Tensor> concatColumns(const std::vector<Value *> &ws) {
  for (Value *w : ws)
    if (!w->data())
      return nullptr; // IR text: weights carry no data
  int64_t d = ws[0]->data()->shape()[0], total = 0;
  for (Value *w : ws)
    total += w->data()->shape()[1];
  DType dt = ws[0]->dtype();
  size_t es = dtypeSize(dt);
  auto out = std::make_shared<Tensor>(dt, std::vector<int64_t>{d, total});
  auto *dst = out->data<uint8_t>();
  int64_t col = 0;
  for (Value *w : ws) {
    int64_t n = w->data()->shape()[1];
    auto *src = static_cast<const uint8_t *>(w->data()->rawData());
    for (int64_t r = 0; r < d; ++r)
      std::copy(src + r * n * es, src + (r + 1) * n * es, dst + (r * total + col) * es);
    col += n;
  }
  return out;
}

void fuseSiblingMatmuls(Module &m, Function &f) {
  std::map<Value *, std::vector<Op *>> byInput;
  for (auto &op : f.ops()) {
    if (!op->is("matmul"))
      continue;
    Value *w = op->operand(1);
    if (!w->isWeight() || w->rank() != 2 || !w->shape()[0].isConstant() ||
        !w->shape()[1].isConstant())
      continue;
    byInput[op->operand(0)].push_back(op.get());
  }
  for (auto &[x, mms] : byInput) {
    // Same weight dtype and d; at least two.
    std::vector<Op *> set;
    for (Op *mm : mms)
      if (mm->operand(1)->type().dtype == mms[0]->operand(1)->type().dtype)
        set.push_back(mm);
    if (set.size() < 2)
      continue;
    std::vector<Value *> ws;
    std::vector<int64_t> sizes;
    std::string name;
    for (Op *mm : set) {
      ws.push_back(mm->operand(1));
      sizes.push_back(mm->operand(1)->shape()[1].constant());
      name += (name.empty() ? "" : "+") + mm->operand(1)->name();
    }
    int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
    Value *cat = m.weight(name); // @prefill and @decode_step share it
    if (!cat)
      cat = m.addWeight(name, Type{ws[0]->dtype(), {ws[0]->shape()[0], Dim(total)}}, concatColumns(ws));
    Type outT = set[0]->result()->type();
    outT.shape.back() = Dim(total);
    Op *first = set[0];
    auto mm = std::make_unique<Op>("matmul", std::vector<Value *>{x, cat}, std::vector<Type>{outT},
                                   first->loc());
    std::vector<Type> parts;
    for (Op *o : set)
      parts.push_back(o->result()->type());
    Value *fused = f.insertBefore(f.find(first), std::move(mm))->result();
    auto split = std::make_unique<Op>("split", std::vector<Value *>{fused}, parts, first->loc());
    split->setAttr("axis", int64_t(-1));
    split->setAttr("split", sizes);
    Op *sp = f.insertBefore(f.find(first), std::move(split));
    for (size_t i = 0; i < set.size(); ++i) {
      f.replaceAllUses(set[i]->result(), sp->result(i));
      f.erase(set[i]);
    }
  }
}

// ---- 2. grouping ------------------------------------------------------------

class Grouper {
public:
  Grouper(Module &m, Function &f) : m_(m), f_(f) {}

  void run() {
    computeDepthAndLeaves();
    formGroups();
    int n = 0;
    for (auto &g : groups_)
      if (!g.empty())
        outline(g, n++);
  }

private:
  void computeDepthAndLeaves() {
    for (auto &op : f_.ops()) {
      int d = 0;
      bool leaf = isFusable(*op);
      for (Value *v : op->operands()) {
        Op *p = v->definingOp();
        if (!p)
          continue; // argument or weight
        int pd = depth_[p] + (isFusable(*p) || isHostValue(*p) ? 0 : 1);
        d = std::max(d, pd);
        leaf &= isHostValue(*p) || leaves_.count(p);
      }
      depth_[op.get()] = d;
      // Only cheap gathers/reshapes of tables are recomputed per user.
      if (leaf && patternOf(*op) == OpPattern::Injective)
        leaves_.insert(op.get());
    }
    // A leaf that a non-fusable op reads directly must run on its own.
    for (auto &op : f_.ops())
      if (!isFusable(*op) && !isHostValue(*op))
        for (Value *v : op->operands())
          if (Op *p = v->definingOp())
            leaves_.erase(p);
    for (auto &o : f_.outputs())
      if (Op *p = o.value->definingOp())
        leaves_.erase(p);
  }

  Op *find(Op *a) {
    while (parent_[a] != a)
      a = parent_[a] = parent_[parent_[a]];
    return a;
  }

  void formGroups() {
    std::vector<Op *> members;
    for (auto &op : f_.ops())
      if (isFusable(*op) && !leaves_.count(op.get())) {
        parent_[op.get()] = op.get();
        members.push_back(op.get());
      }
    for (Op *op : members)
      for (Value *v : op->operands()) {
        Op *p = v->definingOp();
        if (p && parent_.count(p) && depth_[p] == depth_[op])
          parent_[find(p)] = find(op);
      }
    std::map<Op *, size_t> index;
    for (Op *op : members) { // program order within each group
      Op *root = find(op);
      if (!index.count(root)) {
        index[root] = groups_.size();
        groups_.emplace_back();
      }
      groups_[index[root]].push_back(op);
    }
  }

  // Moves the group's ops (plus copies of the leaves and host values they
  // read) into a new function and replaces them by one `fused` op.
  void outline(const std::vector<Op *> &group, int n) {
    std::set<Op *> inGroup(group.begin(), group.end());
    std::string name = "fused_" + f_.name() + "_" + std::to_string(n);
    Function *body = m_.addFunction(name);
    std::map<Value *, Value *> map;   // outer value -> body value
    std::vector<Value *> inputs;      // operands of the fused op
    std::function<Value *(Value *)> get = [&](Value *v) -> Value * {
      if (auto it = map.find(v); it != map.end())
        return it->second;
      Op *p = v->definingOp();
      if (p && (isHostValue(*p) || leaves_.count(p))) { // copy into the body
        std::vector<Value *> ops;
        for (Value *o : p->operands())
          ops.push_back(get(o));
        std::vector<Type> types;
        for (Value *r : p->results())
          types.push_back(r->type());
        auto c = std::make_unique<Op>(p->kind(), ops, types, p->loc());
        for (auto &[k, a] : p->attrs())
          c->setAttr(k, a);
        Op *cp = body->append(std::move(c));
        for (size_t i = 0; i < p->numResults(); ++i)
          map[p->result(i)] = cp->result(i);
        return map[v];
      }
      Value *a = body->addArgument("in" + std::to_string(inputs.size()), v->type());
      inputs.push_back(v);
      return map[v] = a;
    };
    for (Op *op : group) {
      std::vector<Value *> ops;
      for (Value *o : op->operands())
        ops.push_back(get(o));
      std::vector<Type> types;
      for (Value *r : op->results())
        types.push_back(r->type());
      auto c = std::make_unique<Op>(op->kind(), ops, types, op->loc());
      for (auto &[k, a] : op->attrs())
        c->setAttr(k, a);
      Op *cp = body->append(std::move(c));
      for (size_t i = 0; i < op->numResults(); ++i)
        map[op->result(i)] = cp->result(i);
    }
    // Results: values used outside the group.
    std::set<Value *> outside;
    for (auto &o : f_.outputs())
      outside.insert(o.value);
    for (auto &op : f_.ops())
      if (!inGroup.count(op.get()))
        for (Value *v : op->operands())
          outside.insert(v);
    std::vector<Value *> results;
    std::vector<Type> types;
    bool norm = false;
    for (Op *op : group) {
      norm |= patternOf(*op) == OpPattern::Reduction;
      for (Value *r : op->results())
        if (outside.count(r)) {
          results.push_back(r);
          types.push_back(r->type());
          body->addOutput("out" + std::to_string(results.size() - 1), map[r]);
        }
    }
    auto fused = std::make_unique<Op>("fused", inputs, types, group.front()->loc());
    fused->setAttr("body", name);
    fused->setAttr("pattern", std::string(norm ? "reduction" : "elementwise"));
    // Insert where the last member was: every input is defined before it. An
    // outside user of an early member may sit before that point; sortOps()
    // restores def-before-use afterwards (the depth rule keeps it acyclic).
    Op *last = group.back();
    auto it = f_.find(last);
    Op *fop = f_.insertBefore(std::next(it), std::move(fused));
    for (size_t i = 0; i < results.size(); ++i)
      f_.replaceAllUses(results[i], fop->result(i));
    for (auto r = group.rbegin(); r != group.rend(); ++r)
      f_.erase(*r);
  }

  Module &m_;
  Function &f_;
  std::map<Op *, int> depth_;
  std::set<Op *> leaves_;
  std::map<Op *, Op *> parent_;
  std::vector<std::vector<Op *>> groups_;
};

// A stable topological order: ops keep their relative order where the data
// allows it.
void sortOps(Function &f) {
  std::map<const Value *, Op *> def;
  std::map<Op *, size_t> pos;
  std::vector<Op *> order;
  for (auto &op : f.ops()) {
    pos[op.get()] = order.size();
    order.push_back(op.get());
    for (Value *r : op->results())
      def[r] = op.get();
  }
  std::map<Op *, int> pending;
  std::map<Op *, std::vector<Op *>> users;
  for (Op *op : order)
    for (Value *v : op->operands())
      if (auto it = def.find(v); it != def.end()) {
        ++pending[op];
        users[it->second].push_back(op);
      }
  std::set<std::pair<size_t, Op *>> ready;
  for (Op *op : order)
    if (!pending[op])
      ready.insert({pos[op], op});
  Function::OpList sorted;
  std::map<Op *, Function::OpList::iterator> where;
  for (auto it = f.ops().begin(); it != f.ops().end(); ++it)
    where[it->get()] = it;
  while (!ready.empty()) {
    Op *op = ready.begin()->second;
    ready.erase(ready.begin());
    sorted.splice(sorted.end(), f.ops(), where[op]);
    for (Op *u : users[op])
      if (--pending[u] == 0)
        ready.insert({pos[u], u});
  }
  f.ops().splice(f.ops().end(), sorted);
}

// ---- 3. GEMM epilogues --------------------------------------------------------

// cuBLASLt folds a bias vector (and relu/gelu after it) into the GEMM. The
// matmul is marked; the fused group still holds the add, so the CPU executor
// (and any executor without the epilogue) keeps the exact semantics.
void markEpilogues(Function &f) {
  for (auto &op : f.ops()) {
    if (!op->is("matmul"))
      continue;
    auto users = f.users(op->result());
    if (users.size() != 1 || !users[0]->is("add"))
      continue;
    Op *add = users[0];
    Value *bias = add->operand(0) == op->result() ? add->operand(1) : add->operand(0);
    if (!bias->isWeight() || bias->rank() != 1 || bias->shape()[0] != op->result()->shape().back())
      continue;
    std::string ep = "bias";
    auto next = f.users(add->result());
    if (next.size() == 1 && (next[0]->is("relu") || next[0]->is("gelu")))
      ep += "_" + next[0]->kind();
    op->setAttr("epilogue", ep);
  }
}

} // namespace

llvm::Error fusePass(Module &m) {
  std::vector<Function *> fs;
  for (auto &f : m.functions())
    if (f->name() == "prefill" || f->name() == "decode_step")
      fs.push_back(f.get());
  for (Function *f : fs) {
    fuseSiblingMatmuls(m, *f);
    markEpilogues(*f);
    Grouper(m, *f).run();
    sortOps(*f);
    f->eraseDeadOps();
  }
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
