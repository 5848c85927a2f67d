// Copying functions and slices of functions (ops are owned by one function).
#pragma once
#include "compiler/ir/IR.h"

#include <map>
#include <string>
#include <vector>

namespace genc {

using ValueMap = std::map<const Value *, Value *>;

/// Appends to `dst` a copy of `op` (kind, attributes, result types,
/// location) that reads `operands`; `results` (optional) receives each old
/// result -> its copy.
Op *appendCopy(Function &dst, const Op &op, std::vector<Value *> operands,
               ValueMap *results = nullptr);

/// Copies `f` into `m` as `name`; weights are shared. `map` (optional)
/// receives old -> new for arguments and results.
Function *cloneFunction(Module &m, const Function &f, const std::string &name,
                        ValueMap *map = nullptr);

/// A new function `name` in `m` with f's arguments whose outputs are `roots`,
/// holding only the ops the roots depend on. Used to evaluate a subgraph
/// (e.g. a mask) in the interpreter.
Function *extractSlice(Module &m, const Function &f, const std::vector<const Value *> &roots,
                       const std::string &name);

} // namespace genc
