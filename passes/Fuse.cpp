// fuse: fewer, larger kernels between the GEMMs and attention (LightSeq).
//
// Runs after fuse-gemms and fold-attention-io on @prefill, @decode_step and
// @encode. Maximal connected chains of elementwise, injective and
// normalisation ops (op patterns from OpDefs) become one `fused` op each.
// Two ops join only if they sit behind the same number of GEMM/attention ops
// ("anchor depth"): a path from one member to another through an anchor
// would then raise the depth, so a group never depends on itself. Cheap
// leaves (injective/elementwise ops over arguments, weights and constants
// only, like the position-table gathers) are copied into each group that
// reads them instead of being launched on their own; constants and dims are
// copied likewise (they are host values, not kernels).
//
// A group is `%r... = fused(%inputs...) {body = "NAME", pattern = ...}` and
// its ops move into a module function @NAME(inputs...) -> (results...): the
// CPU executor runs that body op by op with its own kernels (identical
// semantics), codegen turns it into one CUDA kernel. Weights a group reads are
// operands of the fused op, so the body only sees its arguments.
//
// Remarks: each group formed (Passed) and, for each op that reads a group's
// result, why that op is not in the group (Analysis: an opaque op, or one
// behind another GEMM/attention).
#include "compiler/ir/Clone.h"
#include "compiler/remarks/Remark.h"
#include "passes/Passes.h"
#include "passes/analysis/Fusability.h"
#include "passes/analysis/PlanPrograms.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace genc {
namespace {

class Grouper {
public:
  Grouper(Module &m, Function &f) : m_(m), f_(f), R_(m, "fuse") {}

  void run() {
    computeDepthAndLeaves();
    formGroups();
    int n = 0;
    for (auto &g : groups_)
      if (!g.empty() && !std::all_of(g.begin(), g.end(), [](Op *op) { return isView(*op); }))
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
    ValueMap map;                     // outer value -> body value
    std::vector<Value *> inputs;      // operands of the fused op
    std::function<Value *(Value *)> get = [&](Value *v) -> Value * {
      if (auto it = map.find(v); it != map.end())
        return it->second;
      Op *p = v->definingOp();
      if (p && (isHostValue(*p) || leaves_.count(p))) { // copy into the body
        std::vector<Value *> ops;
        for (Value *o : p->operands())
          ops.push_back(get(o));
        appendCopy(*body, *p, ops, &map);
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
      appendCopy(*body, *op, ops, &map);
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
    remarkGroup(group, inGroup, results, name);
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

  void remarkGroup(const std::vector<Op *> &group, const std::set<Op *> &inGroup,
                   const std::vector<Value *> &results, const std::string &name) {
    std::string kinds;
    std::set<std::string> seen;
    for (Op *op : group)
      if (seen.insert(op->kind()).second)
        kinds += (kinds.empty() ? "" : ", ") + op->kind();
    R_.passed("Fused", f_, group.front())
        << arg("Ops", int64_t(group.size())) << " ops fused into one kernel "
        << arg("Body", "@" + name) << " (" << arg("Kinds", kinds) << ")";
    std::set<Op *> readers;
    for (Value *r : results)
      for (Op *u : f_.users(r))
        if (!inGroup.count(u) && readers.insert(u).second)
          R_.analysis("GroupEnded", f_, u)
              << arg("Body", "@" + name) << " ends before " << arg("Op", u->kind()) << ": "
              << arg("Reason", isFusable(*u) ? "it sits behind another GEMM or attention op "
                                               "(joining would make the kernel depend on itself)"
                                             : "it is opaque (a GEMM, attention or other op no "
                                               "kernel fuses)");
    for (auto &o : f_.outputs())
      if (std::find(results.begin(), results.end(), o.value) != results.end())
        R_.analysis("GroupEnded", f_, group.back())
            << arg("Body", "@" + name) << " ends at the program output " << arg("Output", o.name);
  }

  Module &m_;
  Function &f_;
  Remarks R_;
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

} // namespace

llvm::Error fusePass(Module &m) {
  for (Function *f : planPrograms(m)) {
    Grouper(m, *f).run();
    sortOps(*f);
    f->eraseDeadOps();
  }
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
