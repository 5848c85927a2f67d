#include "compiler/ir/Clone.h"

#include <set>

namespace genc {

Op *appendCopy(Function &dst, const Op &op, std::vector<Value *> operands, ValueMap *results) {
  std::vector<Type> types;
  for (Value *r : op.results())
    types.push_back(r->type());
  Op *c = dst.append(std::make_unique<Op>(op.kind(), std::move(operands), types, op.loc()));
  for (auto &[k, a] : op.attrs())
    c->setAttr(k, a);
  for (size_t i = 0; results && i < op.numResults(); ++i)
    (*results)[op.result(i)] = c->result(i);
  return c;
}

static Op *cloneOp(Function &dst, const Op &op, ValueMap &map) {
  std::vector<Value *> operands;
  for (Value *v : op.operands()) {
    auto it = map.find(v);
    operands.push_back(it == map.end() ? v : it->second); // weights map to themselves
  }
  return appendCopy(dst, op, operands, &map);
}

Function *cloneFunction(Module &m, const Function &f, const std::string &name, ValueMap *out) {
  ValueMap local;
  ValueMap &map = out ? *out : local;
  Function *g = m.addFunction(name);
  for (auto &a : f.arguments())
    map[a.get()] = g->addArgument(a->name(), a->type());
  for (auto &op : f.ops())
    cloneOp(*g, *op, map);
  for (auto &o : f.outputs()) {
    auto it = map.find(o.value);
    g->addOutput(o.name, it == map.end() ? o.value : it->second);
  }
  return g;
}

Function *extractSlice(Module &m, const Function &f, const std::vector<const Value *> &roots,
                       const std::string &name) {
  std::set<const Value *> needed(roots.begin(), roots.end());
  std::set<const Op *> keep;
  for (auto it = f.ops().rbegin(); it != f.ops().rend(); ++it) {
    const Op *op = it->get();
    bool used = false;
    for (Value *r : op->results())
      used |= needed.count(r) != 0;
    if (!used)
      continue;
    keep.insert(op);
    for (Value *v : op->operands())
      needed.insert(v);
  }
  ValueMap map;
  Function *g = m.addFunction(name);
  for (auto &a : f.arguments())
    map[a.get()] = g->addArgument(a->name(), a->type());
  for (auto &op : f.ops())
    if (keep.count(op.get()))
      cloneOp(*g, *op, map);
  for (size_t i = 0; i < roots.size(); ++i) {
    auto it = map.find(roots[i]);
    g->addOutput("out" + std::to_string(i),
                 it == map.end() ? const_cast<Value *>(roots[i]) : it->second);
  }
  return g;
}

} // namespace genc
