// The interpreter's driver: binds symbols from the arguments, runs each op's
// kernel in order, and frees every value after its last use so that real
// models run in bounded memory. Kernels live in the family files.
#include "compiler/interp/Interpreter.h"

#include "runtime/cpu/ops/OpKernels.h"
#include "compiler/ir/OpDefs.h"

#include <unordered_map>

namespace genc {

using genrt::cpu::dimsStr;

static llvm::Error kernelError(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::string typeOf(const Tensor &t) {
  return std::string(dtypeName(t.dtype())) + dimsStr(t.shape());
}

llvm::Error checkArgumentType(const Value &arg, const Tensor &t) {
  const Type &ty = arg.type();
  if (t.dtype() != ty.dtype || t.rank() != ty.rank())
    return kernelError("expected " + ty.str() + ", got " + typeOf(t));
  for (int64_t i = 0; i < t.rank(); ++i) {
    const Dim &d = ty.shape[i];
    if (d.isConstant() && d.constant() != t.shape()[i])
      return kernelError("expected " + ty.str() + ", got " + typeOf(t) + " (dim " +
                         std::to_string(i) + " differs)");
  }
  return llvm::Error::success();
}

llvm::Expected<SymbolBindings>
bindArguments(const Function &f, const std::vector<Tensor> &inputs,
              llvm::function_ref<std::string(const Value &)> describe) {
  auto who = [&](const Value &a) {
    return describe ? describe(a) : "argument '" + a.name() + "'";
  };
  const auto &args = f.arguments();
  if (inputs.size() != args.size())
    return kernelError("@" + f.name() + " takes " + std::to_string(args.size()) +
                       " inputs, got " + std::to_string(inputs.size()));
  SymbolBindings env;
  std::map<std::string, const Value *> boundBy;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto e = checkArgumentType(*args[i], inputs[i]))
      return kernelError(who(*args[i]) + ": " + llvm::toString(std::move(e)));
    for (int64_t j = 0; j < args[i]->rank(); ++j) {
      const Dim &d = args[i]->shape()[j];
      if (!d.isSymbol())
        continue;
      const int64_t v = inputs[i].shape()[j];
      auto [it, fresh] = env.emplace(d.symbolName(), v);
      if (fresh) {
        boundBy[d.symbolName()] = args[i].get();
      } else if (it->second != v) {
        return kernelError(who(*args[i]) + ": dim " + std::to_string(j) + " ('" +
                           d.symbolName() + "') is " + std::to_string(v) + ", but " +
                           who(*boundBy[d.symbolName()]) + " has '" + d.symbolName() +
                           "' = " + std::to_string(it->second) + " (got " +
                           typeOf(inputs[i]) + ", expected " + args[i]->type().str() + ")");
      }
    }
  }
  // Dims such as 2*seq+1 with one unknown symbol: solve when linear. Probing
  // the dim at u = 0, 1, 2 gives its slope and offset without reading terms.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < args.size(); ++i)
      for (int64_t j = 0; j < args[i]->rank(); ++j) {
        const Dim &d = args[i]->shape()[j];
        std::vector<std::string> unknown;
        for (const auto &s : d.symbols())
          if (!env.count(s))
            unknown.push_back(s);
        if (unknown.size() != 1)
          continue;
        SymbolBindings probe = env;
        int64_t at[3];
        for (int u = 0; u < 3; ++u) {
          probe[unknown[0]] = u;
          at[u] = *d.evaluate(probe);
        }
        const int64_t slope = at[1] - at[0], v = inputs[i].shape()[j];
        if (slope != 0 && at[2] - at[1] == slope && (v - at[0]) % slope == 0 &&
            (v - at[0]) / slope >= 0) {
          env[unknown[0]] = (v - at[0]) / slope;
          boundBy[unknown[0]] = args[i].get();
          progress = true;
        }
      }
  }
  for (size_t i = 0; i < args.size(); ++i)
    for (int64_t j = 0; j < args[i]->rank(); ++j) {
      const Dim &d = args[i]->shape()[j];
      auto v = d.evaluate(env);
      if (!v)
        return kernelError(who(*args[i]) + ": cannot bind the symbols of dim " +
                           std::to_string(j) + " (" + d.str() + ") from size " +
                           std::to_string(inputs[i].shape()[j]));
      if (*v != inputs[i].shape()[j])
        return kernelError(who(*args[i]) + ": dim " + std::to_string(j) + " is " +
                           std::to_string(inputs[i].shape()[j]) + ", but " + d.str() + " = " +
                           std::to_string(*v) + " (got " + typeOf(inputs[i]) + ", expected " +
                           args[i]->type().str() + ")");
    }
  return env;
}

namespace {

class Runner {
public:
  Runner(const Module &m, const Function &f, const InterpretOptions &opts)
      : m_(m), f_(f), opts_(opts) {}

  llvm::Expected<std::vector<Tensor>> run(const std::vector<Tensor> &inputs) {
    auto env = bindArguments(f_, inputs);
    if (!env)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "interpreter: @" + f_.name() + ": " +
                                         llvm::toString(env.takeError()));
    symbols_ = std::move(*env);
    for (size_t i = 0; i < inputs.size(); ++i)
      values_[f_.arguments()[i].get()] = genrt::cpu::toDomain(inputs[i]);
    computeLastUses();

    const genrt::cpu::KernelTable &kernels = genrt::cpu::kernelTable();
    genrt::cpu::KernelContext ctx;
    ctx.symbols = &symbols_;
    // `fused` groups (passes/Fuse.cpp): interpret the body function.
    ctx.runBody = [this](const std::string &name, const std::vector<Tensor> &ins,
                         std::vector<Tensor> &outs) -> genrt::cpu::Error {
      const Function *body = m_.function(name);
      if (!body)
        return genrt::cpu::Error::make("no function @" + name + " for the fused body");
      auto r = interpret(m_, *body, ins, opts_);
      if (!r)
        return genrt::cpu::Error::make(llvm::toString(r.takeError()));
      if (r->size() != outs.size())
        return genrt::cpu::Error::make("@" + name + " gives " + std::to_string(r->size()) +
                                       " results, the fused op has " + std::to_string(outs.size()));
      outs = std::move(*r);
      return genrt::cpu::Error::success();
    };
    std::vector<int64_t> resultRanks;
    ctx.resultRanks = &resultRanks;
    size_t index = 0;
    for (const auto &opPtr : f_.ops()) {
      const Op &op = *opPtr;
      std::vector<Tensor> ins;
      ins.reserve(op.numOperands());
      for (const Value *v : op.operands()) {
        auto t = lookup(v);
        if (!t)
          return fail(op, llvm::toString(t.takeError()));
        ins.push_back(*t);
      }
      auto it = kernels.find(op.kind());
      if (it == kernels.end())
        return fail(op, "the interpreter has no kernel for this op");
      // Kernels index their operands and results by position: an unverified
      // module (a pass mid-rewrite) must not make them read out of bounds.
      if (const OpDef *def = lookupOp(op.kind())) {
        const int n = static_cast<int>(op.numOperands()), r = static_cast<int>(op.numResults());
        if (n < def->minOperands || (def->maxOperands >= 0 && n > def->maxOperands) ||
            r < def->minResults || (def->maxResults >= 0 && r > def->maxResults))
          return fail(op, "has " + std::to_string(n) + " operands and " + std::to_string(r) +
                              " results, which its definition does not allow");
      }
      std::vector<Tensor> outs(op.numResults());
      resultRanks.clear();
      for (const Value *r : op.results())
        resultRanks.push_back(r->rank());
      if (auto e = it->second(ctx, op.attrs(), ins, outs))
        return fail(op, e.message());
      for (size_t r = 0; r < outs.size(); ++r) {
        if (!outs[r].valid())
          return fail(op, "kernel produced no value for result " + std::to_string(r));
        wrapNarrowInts(op.result(r)->dtype(), outs[r]);
        if (opts_.checkResultTypes)
          if (auto e = checkResult(*op.result(r), outs[r]))
            return fail(op, "result " + std::to_string(r) + ": " + llvm::toString(std::move(e)));
        const Value *res = op.result(r);
        if (lastUse_.count(res) || isOutput_.count(res)) // dead results are dropped at once
          values_[res] = std::move(outs[r]);
      }
      ins.clear();
      for (const Value *v : op.operands()) // free what no later op reads
        if (!v->isWeight() && lastUse_[v] == index && !isOutput_.count(v))
          values_.erase(v);
      ++index;
    }
    std::vector<Tensor> results;
    for (const auto &o : f_.outputs()) {
      auto t = lookup(o.value);
      if (!t)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "interpreter: @" + f_.name() + ": output '" + o.name +
                                           "': " + llvm::toString(t.takeError()));
      results.push_back(*t);
    }
    return results;
  }

private:
  llvm::Error fail(const Op &op, const std::string &msg) {
    std::string where = "interpreter: @" + f_.name() + ": op '" + op.kind() + "'";
    if (!op.loc().empty())
      where += " at \"" + op.loc() + "\"";
    return llvm::createStringError(llvm::inconvertibleErrorCode(), where + ": " + msg);
  }

  void computeLastUses() {
    size_t index = 0;
    for (const auto &op : f_.ops()) {
      for (const Value *v : op->operands())
        lastUse_[v] = index;
      ++index;
    }
    for (const auto &o : f_.outputs())
      isOutput_[o.value] = true;
  }

  llvm::Expected<Tensor> lookup(const Value *v) {
    if (v->isWeight()) {
      auto it = weights_.find(v);
      if (it != weights_.end())
        return it->second;
      if (m_.weight(v->name()) != v)
        return kernelError("weight @" + v->name() + " is not in this module");
      const Tensor *data = v->data();
      if (!data)
        return kernelError("weight @" + v->name() +
                           " has no data (IR parsed from text keeps only names and shapes; "
                           "use constant ops)");
      return weights_[v] = genrt::cpu::toDomain(*data); // converted once per run
    }
    auto it = values_.find(v);
    if (it == values_.end())
      return kernelError("operand is not computed yet (or was freed): a value used before "
                         "its definition");
    return it->second;
  }

  /// i32 / i8 / u8 results are held as i64 but must overflow like their
  /// declared type (ONNX integer arithmetic wraps).
  static void wrapNarrowInts(DType declared, Tensor &t) {
    if (t.dtype() != DType::I64 || declared == DType::I64 || !isInteger(declared))
      return;
    int64_t *p = t.data<int64_t>();
    for (int64_t i = 0, n = t.numElements(); i < n; ++i)
      p[i] = declared == DType::I32  ? static_cast<int32_t>(static_cast<uint32_t>(p[i]))
             : declared == DType::I8 ? static_cast<int8_t>(static_cast<uint8_t>(p[i]))
                                     : static_cast<uint8_t>(p[i]);
  }

  /// The result's declared type must describe what the kernel computed: same
  /// dtype class, rank, and dims wherever they evaluate under the bindings.
  llvm::Error checkResult(const Value &v, const Tensor &t) {
    const Type &ty = v.type();
    bool ok = genrt::cpu::domainOf(ty.dtype) == t.dtype() && ty.rank() == t.rank();
    for (int64_t i = 0; ok && i < t.rank(); ++i) {
      auto d = ty.shape[i].evaluate(symbols_);
      ok = !d || *d == t.shape()[i];
    }
    if (ok)
      return llvm::Error::success();
    return kernelError("computed " + typeOf(t) + " but the IR says " + ty.str() +
                       boundSymbolsNote(ty));
  }

  std::string boundSymbolsNote(const Type &ty) {
    std::string note;
    std::map<std::string, bool> seen;
    for (const Dim &d : ty.shape)
      for (const auto &s : d.symbols())
        if (!seen[s] && symbols_.count(s)) {
          seen[s] = true;
          note += (note.empty() ? " (with " : ", ") + s + " = " + std::to_string(symbols_[s]);
        }
    return note.empty() ? note : note + ")";
  }

  const Module &m_;
  const Function &f_;
  const InterpretOptions &opts_;
  SymbolBindings symbols_;
  std::unordered_map<const Value *, Tensor> values_, weights_;
  std::unordered_map<const Value *, size_t> lastUse_;
  std::unordered_map<const Value *, bool> isOutput_;
};

} // namespace

llvm::Expected<std::vector<Tensor>> interpret(const Module &m, const Function &f,
                                              const std::vector<Tensor> &inputs,
                                              const InterpretOptions &opts) {
  return Runner(m, f, opts).run(inputs);
}

} // namespace genc
