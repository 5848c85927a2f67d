// Rewriting symbolic dims across a function.
#pragma once
#include "compiler/ir/IR.h"

#include <map>
#include <string>

namespace genc {

/// Replaces symbols by dims in every argument and result type of f and in
/// every shape-valued attribute (`dims` ops and the like).
void substituteSymbols(Function &f, const std::map<std::string, Dim> &sub);

/// Evaluates a shape under bindings; nullopt if a symbol is unbound.
std::optional<std::vector<int64_t>> evaluateShape(const Shape &s,
                                                  const std::map<std::string, int64_t> &env);

} // namespace genc
