#include "codegen/StepWeights.h"

#include <set>

namespace genc {
namespace {

// Whether every use of `v` in `f` reads only rows of it: gather's table,
// or an argument of a fused body whose every use in the body is.
bool readsRowsOnly(const Module &m, const Function &f, const Value *v) {
  bool used = false;
  for (auto &op : f.ops()) {
    const auto &in = op->operands();
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] != v)
        continue;
      used = true;
      if (op->is("gather") && i == 0)
        continue;
      const Function *body = m.function(op->strAttr("body", ""));
      if (!body || i >= body->arguments().size() || !readsRowsOnly(m, *body, body->arguments()[i].get()))
        return false;
    }
  }
  return used;
}

} // namespace

int64_t weightBytesRead(const Module &m, const Function &f) {
  std::set<const Value *> seen;
  int64_t bytes = 0;
  for (auto &op : f.ops())
    for (const Value *v : op->operands())
      if (v->isWeight() && v->data() && seen.insert(v).second && !readsRowsOnly(m, f, v))
        bytes += static_cast<int64_t>(v->data()->numBytes());
  return bytes;
}

std::map<std::string, int64_t> quantizedWeightBytes(const Module &m) {
  std::map<std::string, int64_t> out;
  for (auto &f : m.functions())
    for (auto &op : f->ops()) {
      if (!op->is("matmul_nbits"))
        continue;
      int64_t bytes = 0;
      for (size_t i = 1; i < op->numOperands(); ++i)
        if (const Tensor *t = op->operand(i)->data())
          bytes += static_cast<int64_t>(t->numBytes());
      out[op->operand(1)->name()] = bytes;
    }
  return out;
}

} // namespace genc
