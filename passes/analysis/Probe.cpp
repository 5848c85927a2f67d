#include "passes/analysis/Probe.h"

#include "compiler/interp/Interpreter.h"
#include "compiler/ir/Clone.h"

namespace genc {

bool isMaskArgument(const Value &arg) {
  const std::string &n = arg.name();
  return n.size() >= 14 && n.compare(n.size() - 14, 14, "attention_mask") == 0;
}

llvm::Expected<Probe> makeProbe(const Function &f, const ProbeSpec &spec) {
  Probe p;
  std::mt19937_64 rng(spec.seed);
  for (auto &a : f.arguments())
    for (size_t i = 0; i < a->shape().size(); ++i)
      for (const auto &s : a->shape()[i].symbols())
        if (!p.symbols.count(s))
          p.symbols[s] = i == 0 ? spec.batch : spec.length;
  for (auto &a : f.arguments()) {
    std::vector<int64_t> shape;
    for (const Dim &d : a->shape()) {
      auto v = d.evaluate(p.symbols);
      if (!v || *v < 0)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "cannot bind the shape of argument '%s' for a probe",
                                       a->name().c_str());
      shape.push_back(*v);
    }
    Tensor t(a->dtype(), shape);
    int64_t n = t.numElements();
    if (isMaskArgument(*a) && shape.size() == 2) {
      // Row 0 unpadded; odd rows left-padded, even rows right-padded, by
      // different amounts, so padding on either side is seen.
      std::vector<std::vector<int64_t>> rows;
      for (int64_t b = 0; b < shape[0]; ++b) {
        int64_t len = shape[1], pad = spec.padded && b ? std::min(len - 1, 2 * b + 1) : 0;
        std::vector<int64_t> row(len, 1);
        for (int64_t j = 0; j < pad; ++j)
          row[b % 2 ? j : len - 1 - j] = 0;
        for (int64_t j = 0; j < len; ++j)
          t.setInt(b * len + j, row[j]);
        rows.push_back(row);
      }
      p.masks[a->name()] = rows;
    } else if (isFloat(a->dtype())) {
      std::normal_distribution<float> dist(0.f, 1.f);
      for (int64_t i = 0; i < n; ++i)
        t.setDouble(i, dist(rng));
    } else {
      std::uniform_int_distribution<int64_t> dist(3, 60);
      for (int64_t i = 0; i < n; ++i)
        t.setInt(i, dist(rng));
    }
    p.inputs.push_back(std::move(t));
  }
  return p;
}

llvm::Expected<std::vector<Tensor>> evaluateOnProbe(Module &m, const Function &f,
                                                    const std::vector<const Value *> &roots,
                                                    const Probe &probe) {
  Function *slice = extractSlice(m, f, roots, "__probe_" + f.name());
  InterpretOptions opts;
  opts.checkResultTypes = false; // a pass may be mid-rewrite; values are what we want
  auto r = interpret(m, *slice, probe.inputs, opts);
  m.removeFunction(slice);
  return r;
}

llvm::Expected<Tensor> evaluateWithProbe(Module &m, const Function &f, const Value *v,
                                         const ProbeSpec &spec) {
  auto probe = makeProbe(f, spec);
  if (!probe)
    return probe.takeError();
  auto vals = evaluateOnProbe(m, f, {v}, *probe);
  if (!vals)
    return vals.takeError();
  return std::move((*vals)[0]);
}

} // namespace genc
