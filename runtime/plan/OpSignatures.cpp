#include "runtime/plan/OpSignatures.h"

#include <algorithm>
#include <unordered_map>

namespace genrt {

const std::vector<OpSignature> &allOpSignatures() {
  constexpr OpClass K = OpClass::Kernel, V = OpClass::View;
  // Semantics of each kind: docs/ir-ops.md.
  static const std::vector<OpSignature> table = {
      // Elementwise, numpy broadcasting.
      {"add", 2, 2, 1, 1, "TT", "T", K},
      {"sub", 2, 2, 1, 1, "TT", "T", K},
      {"mul", 2, 2, 1, 1, "TT", "T", K},
      {"div", 2, 2, 1, 1, "TT", "T", K},
      {"pow", 2, 2, 1, 1, "TN", "T", K},
      {"max", 1, -1, 1, 1, "T", "T", K},
      {"min", 1, -1, 1, 1, "T", "T", K},
      {"equal", 2, 2, 1, 1, "TT", "B", K},
      {"less", 2, 2, 1, 1, "TT", "B", K},
      {"less_or_equal", 2, 2, 1, 1, "TT", "B", K},
      {"greater", 2, 2, 1, 1, "TT", "B", K},
      {"greater_or_equal", 2, 2, 1, 1, "TT", "B", K},
      {"and", 2, 2, 1, 1, "BB", "B", K},
      {"or", 2, 2, 1, 1, "BB", "B", K},
      {"not", 1, 1, 1, 1, "B", "B", K},
      {"where", 3, 3, 1, 1, "BTT", "T", K},
      {"abs", 1, 1, 1, 1, "T", "T", K},
      {"neg", 1, 1, 1, 1, "T", "T", K},
      {"exp", 1, 1, 1, 1, "F", "F", K},
      {"log", 1, 1, 1, 1, "F", "F", K},
      {"sqrt", 1, 1, 1, 1, "F", "F", K},
      {"reciprocal", 1, 1, 1, 1, "F", "F", K},
      {"relu", 1, 1, 1, 1, "T", "T", K},
      {"sigmoid", 1, 1, 1, 1, "F", "F", K},
      {"tanh", 1, 1, 1, 1, "F", "F", K},
      {"erf", 1, 1, 1, 1, "F", "F", K},
      {"sin", 1, 1, 1, 1, "F", "F", K},
      {"cos", 1, 1, 1, 1, "F", "F", K},
      {"cast", 1, 1, 1, 1, "*", "*", K},
      {"identity", 1, 1, 1, 1, "T", "T", V},
      {"dropout", 1, 3, 1, 2, "T**", "TB", K},
      {"gelu", 1, 1, 1, 1, "F", "F", K},
      {"silu", 1, 1, 1, 1, "F", "F", K},
      // Data movement.
      {"reshape", 2, 2, 1, 1, "TI", "T", V},
      {"flatten", 1, 1, 1, 1, "T", "T", V},
      {"squeeze", 1, 1, 1, 1, "T", "T", V},
      {"unsqueeze", 1, 1, 1, 1, "T", "T", V},
      {"transpose", 1, 1, 1, 1, "T", "T", K},
      {"expand", 2, 2, 1, 1, "TI", "T", K},
      {"tile", 2, 2, 1, 1, "TI", "T", K},
      {"concat", 1, -1, 1, 1, "T", "T", K},
      {"split", 1, 1, 1, -1, "T", "T", K},
      {"slice", 3, 5, 1, 1, "TI", "T", K},
      {"gather", 2, 2, 1, 1, "TI", "T", K},
      {"gather_elements", 2, 2, 1, 1, "TI", "T", K},
      {"gather_nd", 2, 2, 1, 1, "TI", "T", K},
      {"trilu", 1, 2, 1, 1, "TI", "T", K},
      // Reductions and normalisations.
      {"reduce_mean", 1, 1, 1, 1, "T", "T", K},
      {"softmax", 1, 1, 1, 1, "F", "F", K},
      {"layer_norm", 2, 3, 1, 1, "F", "F", K},
      {"rms_norm", 2, 2, 1, 1, "F", "F", K},
      {"cumsum", 1, 1, 1, 1, "T", "T", K},
      // Matrix products.
      {"matmul", 2, 3, 1, 1, "T", "T", OpClass::Gemm},
      {"gemm", 2, 3, 1, 1, "T", "T", K},
      // (a, b, scales[, zero_points]) {bits, block_size, n}: b holds codes
      {"matmul_nbits", 3, 4, 1, 1, "FIF*", "F", OpClass::NBitsGemm},
      // Attention: raised (the interpreter's), then over the plan's caches.
      {"attention", 3, 5, 1, 1, "FFF*F", "F", K},
      {"kv_attention", 1, 7, 1, 1, "F*", "F", OpClass::CacheAttention},
      {"packed_attention", 1, 7, 1, 1, "F*", "F", OpClass::CacheAttention},
      {"cross_attention", 1, 1, 1, 1, "F", "F", OpClass::CacheAttention},
      // A fused group: operands and results are its body's (checked there).
      {"fused", 0, -1, 1, -1, "*", "*", OpClass::Fused},
      // Values from shapes.
      {"constant", 0, 0, 1, 1, "", "*", K},
      {"shape", 1, 1, 1, 1, "*", "I", K},
      {"constant_of_shape", 1, 1, 1, 1, "I", "*", K},
      {"range", 3, 3, 1, 1, "T", "T", K},
      {"dims", 0, 0, 1, 1, "", "I", OpClass::HostShape},
  };
  return table;
}

const OpSignature *findOpSignature(std::string_view kind) {
  static const std::unordered_map<std::string_view, const OpSignature *> index = [] {
    std::unordered_map<std::string_view, const OpSignature *> m;
    for (const OpSignature &s : allOpSignatures())
      m[s.kind] = &s;
    return m;
  }();
  auto it = index.find(kind);
  return it == index.end() ? nullptr : it->second;
}

namespace {

char domainLetter(DType t) { return isFloat(t) ? 'F' : t == DType::Bool ? 'B' : 'I'; }

const char *domainName(char d) { return d == 'F' ? "float" : d == 'B' ? "bool" : "integer"; }

bool fits(char want, char have) {
  return want == '*' || want == have || (want == 'N' && have != 'B');
}

std::string arity(const char *what, size_t n, int lo, int hi) {
  if (static_cast<int64_t>(n) >= lo && (hi < 0 || static_cast<int64_t>(n) <= hi))
    return "";
  std::string want = std::to_string(lo) + (hi == lo ? "" : hi < 0 ? " or more" : " to " + std::to_string(hi));
  return "has " + std::to_string(n) + " " + what + ", expected " + want;
}

} // namespace

std::string checkOpSignature(const OpSignature &sig, const std::vector<DType> &operands,
                             const std::vector<DType> &results) {
  if (std::string bad = arity("operands", operands.size(), sig.minOperands, sig.maxOperands); !bad.empty())
    return bad;
  if (std::string bad = arity("results", results.size(), sig.minResults, sig.maxResults); !bad.empty())
    return bad;
  char t = 0; // the domain the T's stand for, once one is seen
  for (int r = 0; r < 2; ++r) {
    const std::vector<DType> &vals = r ? results : operands;
    std::string_view letters = r ? sig.results : sig.operands;
    for (size_t i = 0; i < vals.size(); ++i) {
      char want = letters.empty() ? '*' : letters[std::min(i, letters.size() - 1)];
      char have = domainLetter(vals[i]);
      if (want == 'T') {
        if (!t)
          t = have;
        want = t;
      }
      if (!fits(want, have))
        return std::string(r ? "result " : "operand ") + std::to_string(i) + " is " + dtypeName(vals[i]) +
               ", expected " + (want == 'N' ? "float or integer" : domainName(want));
    }
  }
  return "";
}

} // namespace genrt
