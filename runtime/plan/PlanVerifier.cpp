// The plan verifier's structure checks (what is checked where: PlanVerifier.h):
// sizes within PlanLimits.h, each program's and fused body's values and ops
// (signatures, definition before use, the per-kind rules of VerifyOps.cpp
// and VerifyAttention.cpp), the programs' interface with the Session, and
// the kernels' launch metadata.
#include "runtime/plan/PlanVerifier.h"

#include "runtime/plan/OpSignatures.h"
#include "runtime/plan/PlanLimits.h"
#include "runtime/plan/VerifyOp.h"

#include <set>

namespace genrt {
namespace {

using verify::OpSite;
using verify::Symbols;
using SymbolSet = std::set<std::string>;

// The symbols the Session binds when it runs each program (Session.cpp);
// no other program is ever run.
const std::map<std::string, SymbolSet> &sessionSymbols() {
  static const std::map<std::string, SymbolSet> m = {
      {"prefill", {"tokens", "rows"}}, {"decode_step", {"tokens", "rows"}}, {"encode", {"src_tokens"}}};
  return m;
}

int domain(DType t) { return isFloat(t) ? 0 : t == DType::Bool ? 1 : 2; }

class Verifier {
public:
  explicit Verifier(const Plan &plan) : plan_(plan) {}

  Status run() {
    if (std::string bad = limits(); !bad.empty())
      return Status::error("verifier: " + bad);
    // Each body runs under the symbols of the programs that call it.
    std::map<std::string, std::vector<const Program *>> callers;
    for (const auto &[name, prog] : plan_.programs) {
      auto it = sessionSymbols().find(name);
      if (it == sessionSymbols().end() || (name == "encode" && !plan_.model.encoderDecoder))
        return Status::error("verifier: program '" + name + "' is not one the runtime runs");
      for (const OpInfo &op : prog.ops)
        if (op.kind == "fused")
          callers[attrStr(op.attrs, "body")].push_back(&prog);
    }
    for (const auto &[name, prog] : plan_.programs) {
      if (Status s = program(prog, prog.maxSymbols, sessionSymbols().at(name)); !s)
        return s;
      if (std::string bad = sessionInterface(prog); !bad.empty())
        return Status::error("verifier: program " + name + ": " + bad);
    }
    for (const auto &[name, body] : plan_.functions) {
      auto it = callers.find(name);
      if (it == callers.end())
        return Status::error("verifier: fused body '" + name + "' is called by no program");
      for (const Program *caller : it->second)
        if (Status s = program(body, caller->maxSymbols, symbolsOf(*caller)); !s)
          return s;
    }
    for (const KernelInfo &k : plan_.kernels)
      for (const Program *caller : callers[k.name])
        if (std::string bad = kernel(k, *caller); !bad.empty())
          return Status::error("verifier: kernel '" + k.name + "': " + bad);
    return Status::ok();
  }

private:
  static SymbolSet symbolsOf(const Program &p) {
    SymbolSet s;
    for (const auto &[name, v] : p.maxSymbols)
      s.insert(name);
    return s;
  }

  std::string limits() const {
    const ModelInfo &m = plan_.model;
    const KvLayout &kv = plan_.kv;
    if (m.vocabSize > kMaxVocab || kv.slots > kMaxSlots || m.maxLength > kMaxLength || m.maxSourceLength > kMaxLength ||
        plan_.maxTokens > kMaxSymbol)
      return "vocab_size, max_batch * max_beams, max_length (and max_source_length) or max_tokens beyond this runtime's bounds (" +
             std::to_string(kMaxVocab) + ", " + std::to_string(kMaxSlots) + ", " + std::to_string(kMaxLength) + ", " +
             std::to_string(kMaxSymbol) + ")";
    if (static_cast<int64_t>(kv.layers.size()) > kMaxLayers || static_cast<int64_t>(kv.crossLayers.size()) > kMaxLayers)
      return "more than " + std::to_string(kMaxLayers) + " cache layers";
    for (const KvCacheLayer &L : kv.layers)
      if (L.kvHeads > kMaxHeads || L.headDim > kMaxHeadDim)
        return "a KV-cache layer has more heads or a wider head than this runtime's bounds";
    for (const CrossCacheLayer &L : kv.crossLayers)
      if (L.kvHeads > kMaxHeads || L.headDim > kMaxHeadDim)
        return "a cross-attention cache layer has more heads or a wider head than this runtime's bounds";
    return "";
  }

  // A dim over `scope`'s symbols, bounded at `max`, and non-decreasing in
  // its symbols (no negative coefficient), so that its value at the maximum
  // symbols bounds its value in any run.
  static std::string dimRule(const Dim &d, const Symbols &max, const SymbolSet &scope) {
    for (const std::string &sym : d.symbols())
      if (!scope.count(sym) || !max.count(sym))
        return "dim " + d.str() + " names '" + sym + "', which the runtime does not bind for this program";
    for (const auto &[mono, c] : d.terms())
      if (!mono.empty() && c < 0)
        return "dim " + d.str() + " decreases as its symbols grow";
    std::optional<int64_t> v = d.evaluate(max);
    if (!v || *v < 0)
      return "dim " + d.str() + " is negative or overflows at the maximum symbols";
    return "";
  }

  std::string value(const Program &p, size_t i, const Symbols &max, const SymbolSet &scope) const {
    const ValueInfo &v = p.values[i];
    for (const Dim &d : v.shape)
      if (std::string bad = dimRule(d, max, scope); !bad.empty())
        return bad;
    if (!evaluateElements(v.shape, max))
      return "its size overflows at the maximum symbols";
    if (v.storage == Storage::Argument &&
        (v.index < 0 || static_cast<size_t>(v.index) >= p.arguments.size() || p.arguments[v.index] != int32_t(i)))
      return "it is stored as an argument the program does not list";
    if (v.storage == Storage::Weight) {
      const Tensor &w = plan_.weights[v.index];
      auto shape = constantShape(v.shape);
      if (!shape || *shape != w.shape() || domain(v.dtype) != domain(w.dtype()))
        return "it does not have the shape and type of weight '" + plan_.weightNames[v.index] + "'";
    }
    return "";
  }

  Status program(const Program &p, const Symbols &max, const SymbolSet &scope) const {
    const std::string where = "verifier: " + std::string(plan_.functions.count(p.name) ? "fused body '" : "program '") +
                              p.name + "'";
    for (const auto &[sym, n] : p.maxSymbols)
      if (!scope.count(sym) || n < 1 || n > kMaxSymbol)
        return Status::error(where + ": max_symbols: '" + sym + "' = " + std::to_string(n) +
                             " is not a symbol in [1, " + std::to_string(kMaxSymbol) + "] the runtime binds");
    std::vector<char> defined(p.values.size(), 0);
    for (size_t i = 0; i < p.values.size(); ++i) {
      if (std::string bad = value(p, i, max, scope); !bad.empty())
        return Status::error(where + ": value " + std::to_string(i) + ": " + bad);
      defined[i] = p.values[i].storage == Storage::Argument || p.values[i].storage == Storage::Weight;
    }
    for (size_t k = 0; k < p.ops.size(); ++k) {
      const OpInfo &op = p.ops[k];
      std::string at = where + ": op " + std::to_string(k) + " '" + op.kind + "'" +
                       (op.loc.empty() ? "" : " at \"" + op.loc + "\"") + ": ";
      const OpSignature *sig = findOpSignature(op.kind);
      if (!sig)
        return Status::error(at + "no such op kind");
      std::vector<DType> ins, outs;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        if (!defined[op.operands[i]])
          return Status::error(at + "operand " + std::to_string(i) + " (value " + std::to_string(op.operands[i]) +
                               ") is read before it is defined");
        ins.push_back(p.values[op.operands[i]].dtype);
      }
      for (int32_t r : op.results) {
        if (defined[r])
          return Status::error(at + "value " + std::to_string(r) + " is defined twice");
        defined[r] = 1;
        outs.push_back(p.values[r].dtype);
      }
      if (std::string bad = checkOpSignature(*sig, ins, outs); !bad.empty())
        return Status::error(at + bad);
      if (std::string bad = verify::checkOpRules(OpSite{plan_, p, op, max}); !bad.empty())
        return Status::error(at + bad);
    }
    for (size_t i = 0; i < p.outputs.size(); ++i)
      if (!defined[p.outputs[i]])
        return Status::error(where + ": output " + std::to_string(i) + " is never computed");
    return Status::ok();
  }

  // What the Session passes and reads (Session.cpp, Executor.h): token ids
  // and positions [1, T] i64, the logit rows [rows] i64; logits
  // [rows, vocab] f32 (optionally [1, rows, vocab]); @encode's K and V of
  // each cross-attention layer, [1, kv_heads, src_tokens, head_dim] in the
  // cache's dtype. Outputs live in the arena, where the executors read them.
  std::string sessionInterface(const Program &p) const {
    const bool encode = p.name == "encode", prefill = p.name == "prefill";
    const Dim T = Dim::symbol(encode ? "src_tokens" : "tokens"), one(1);
    SymbolSet seen;
    for (size_t i = 0; i < p.arguments.size(); ++i) {
      const std::string &n = p.argumentNames[i];
      const ValueInfo &v = p.values[p.arguments[i]];
      Shape want = n == "logit_rows" ? Shape{Dim::symbol("rows")} : Shape{one, T};
      if ((n != "input_ids" && n != "positions" && !(n == "logit_rows" && prefill)) || !seen.insert(n).second)
        return "argument '" + n + "' is not one the runtime passes (input_ids, positions" +
               (prefill ? ", logit_rows" : "") + ", once each)";
      if (v.dtype != DType::I64 || v.stored != DType::I64 || v.shape != want)
        return "argument '" + n + "' must be i64 " + shapeStr(want);
    }
    for (int32_t o : p.outputs)
      if (p.values[o].storage != Storage::Arena)
        return "an output is not an arena buffer";
    if (!encode) {
      if (p.outputs.size() != 1)
        return "it must return the logits alone";
      const ValueInfo &v = p.values[p.outputs[0]];
      const Dim V(plan_.model.vocabSize);
      bool ok = false;
      for (const char *rows : {"rows", "tokens"})
        if (prefill ? rows == std::string("rows") : true)
          ok |= v.shape == Shape{Dim::symbol(rows), V} || v.shape == Shape{one, Dim::symbol(rows), V};
      if (!ok || v.dtype != DType::F32 || v.stored != DType::F32)
        return "its logits must be f32 [rows, " + std::to_string(plan_.model.vocabSize) + "]";
      return "";
    }
    const KvLayout &kv = plan_.kv;
    if (p.outputs.size() != 2 * kv.crossLayers.size())
      return "it must return one K and one V per cross-attention layer";
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      const ValueInfo &v = p.values[p.outputs[i]];
      const CrossCacheLayer &L = kv.crossLayers[i / 2];
      if (v.shape != Shape{one, Dim(L.kvHeads), T, Dim(L.headDim)} || !isFloat(v.dtype) || v.stored != kv.dtype)
        return "output " + std::to_string(i) + " must be [1, " + std::to_string(L.kvHeads) + ", src_tokens, " +
               std::to_string(L.headDim) + "] stored as " + dtypeName(kv.dtype);
    }
    return "";
  }

  // A kernel launch binds the kernel's symbols from its caller's run.
  std::string kernel(const KernelInfo &k, const Program &caller) const {
    SymbolSet mine(k.symbols.begin(), k.symbols.end());
    for (const std::string &s : mine)
      if (!caller.maxSymbols.count(s))
        return "symbol '" + s + "' is not bound in " + caller.name;
    for (const Dim *d : {&k.work, &k.sharedFloats})
      if (std::string bad = dimRule(*d, caller.maxSymbols, mine); !bad.empty())
        return bad;
    return "";
  }

  const Plan &plan_;
};

} // namespace

Status verifyPlan(const Plan &plan) { return Verifier(plan).run(); }

} // namespace genrt
