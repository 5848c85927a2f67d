#include "compiler/ir/IR.h"

#include <algorithm>
#include <cassert>
#include <set>

namespace genc {

std::string Type::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

Op::Op(std::string kind, std::vector<Value *> operands, std::vector<Type> resultTypes,
       std::string loc)
    : kind_(std::move(kind)), operands_(std::move(operands)), loc_(std::move(loc)) {
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    auto v = std::make_unique<Value>(Value::Kind::Result, std::move(resultTypes[i]));
    v->def_ = this;
    v->resultIndex_ = static_cast<unsigned>(i);
    results_.push_back(std::move(v));
  }
}

std::vector<Value *> Op::results() const {
  std::vector<Value *> r;
  for (auto &v : results_)
    r.push_back(v.get());
  return r;
}

const Attribute *Op::attr(const std::string &n) const {
  auto it = attrs_.find(n);
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Op::intAttr(const std::string &n, int64_t dflt) const { return genrt::attrInt(attrs_, n, dflt); }
double Op::floatAttr(const std::string &n, double dflt) const { return genrt::attrFloat(attrs_, n, dflt); }
std::string Op::strAttr(const std::string &n, const std::string &dflt) const {
  return genrt::attrStr(attrs_, n, dflt);
}
std::vector<int64_t> Op::intsAttr(const std::string &n, std::vector<int64_t> dflt) const {
  return genrt::attrInts(attrs_, n, std::move(dflt));
}
const Tensor *Op::tensorAttr(const std::string &n) const { return genrt::attrTensor(attrs_, n); }

Value *Function::addArgument(const std::string &name, Type type) {
  args_.push_back(std::make_unique<Value>(Value::Kind::Argument, std::move(type), name));
  return args_.back().get();
}

Value *Function::argument(const std::string &name) const {
  for (auto &a : args_)
    if (a->name() == name)
      return a.get();
  return nullptr;
}

void Function::removeArgument(Value *arg) {
  assert(!hasUses(arg) && "removing a used argument");
  args_.erase(std::remove_if(args_.begin(), args_.end(), [&](auto &p) { return p.get() == arg; }),
              args_.end());
}

Op *Function::append(std::unique_ptr<Op> op) {
  op->parent_ = this;
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

Op *Function::insertBefore(OpList::iterator before, std::unique_ptr<Op> op) {
  op->parent_ = this;
  return ops_.insert(before, std::move(op))->get();
}

Function::OpList::iterator Function::find(Op *op) {
  return std::find_if(ops_.begin(), ops_.end(), [&](auto &p) { return p.get() == op; });
}

void Function::erase(Op *op) {
  auto it = find(op);
  assert(it != ops_.end());
  ops_.erase(it);
}

void Function::replaceAllUses(Value *from, Value *to) {
  for (auto &op : ops_)
    for (size_t i = 0; i < op->numOperands(); ++i)
      if (op->operand(i) == from)
        op->setOperand(i, to);
  for (auto &o : outputs_)
    if (o.value == from)
      o.value = to;
}

std::vector<Op *> Function::users(const Value *v) const {
  std::vector<Op *> r;
  for (auto &op : ops_)
    if (std::find(op->operands().begin(), op->operands().end(), v) != op->operands().end())
      r.push_back(op.get());
  return r;
}

Op *Function::soleUser(const Value *v) const {
  for (auto &o : outputs_)
    if (o.value == v)
      return nullptr;
  auto u = users(v);
  return u.size() == 1 ? u[0] : nullptr;
}

bool Function::hasUses(const Value *v) const {
  for (auto &o : outputs_)
    if (o.value == v)
      return true;
  for (auto &op : ops_)
    for (auto *u : op->operands())
      if (u == v)
        return true;
  return false;
}

size_t Function::eraseDeadOps() {
  std::set<const Value *> live;
  for (auto &o : outputs_)
    live.insert(o.value);
  size_t erased = 0;
  // One backward sweep suffices: in SSA order every user follows its def.
  for (auto it = ops_.end(); it != ops_.begin();) {
    --it;
    Op *op = it->get();
    bool used = false;
    for (auto *r : op->results())
      used |= live.count(r) != 0;
    if (!used) {
      it = ops_.erase(it);
      ++erased;
      continue;
    }
    for (auto *v : op->operands())
      live.insert(v);
  }
  return erased;
}

Function *Module::addFunction(const std::string &name) {
  functions_.push_back(std::make_unique<Function>(name));
  return functions_.back().get();
}

Function *Module::function(const std::string &name) const {
  for (auto &f : functions_)
    if (f->name() == name)
      return f.get();
  return nullptr;
}

void Module::removeFunction(Function *f) {
  functions_.erase(std::remove_if(functions_.begin(), functions_.end(),
                                  [&](auto &p) { return p.get() == f; }),
                   functions_.end());
}

Value *Module::addWeight(const std::string &name, Type type, std::shared_ptr<const Tensor> data) {
  assert(!weightIndex_.count(name) && "duplicate weight name");
  weights_.push_back(std::make_unique<Value>(Value::Kind::Weight, std::move(type), name));
  weights_.back()->setData(std::move(data));
  weightIndex_[name] = weights_.back().get();
  return weights_.back().get();
}

Value *Module::weight(const std::string &name) const {
  auto it = weightIndex_.find(name);
  return it == weightIndex_.end() ? nullptr : it->second;
}

void Module::eraseUnusedWeights() {
  std::set<const Value *> used;
  for (auto &f : functions_)
    for (auto &op : f->ops())
      for (auto *v : op->operands())
        used.insert(v);
  for (auto &f : functions_)
    for (auto &o : f->outputs())
      used.insert(o.value);
  std::vector<std::unique_ptr<Value>> kept;
  for (auto &w : weights_) {
    if (used.count(w.get()))
      kept.push_back(std::move(w));
    else
      weightIndex_.erase(w->name());
  }
  weights_ = std::move(kept);
}

} // namespace genc
