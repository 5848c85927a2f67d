// The reference interpreter: runs an IR function on the CPU, exactly in
// float32 (int64 / bool where the graph computes on them). It is the semantic
// reference for every pass: a pass is correct when the interpreter gives the
// same outputs before and after it.
//
// Inside, every value is f32, i64 or bool: f16/bf16/f64 weights and inputs are
// widened or rounded to f32 on entry, narrower integers widened to i64; a cast
// to f16 rounds to half precision but keeps the value as f32; a result
// declared i32 / i8 / u8 wraps to that width but is held as i64. Outputs come
// back in those three types.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace genc {

struct InterpretOptions {
  /// Check every result against its declared type (dtype class, rank, and
  /// each dim that evaluates under the argument bindings). Catches shape
  /// inference and pass bugs at the op that goes wrong.
  bool checkResultTypes = true;
};

/// Runs `f` on `inputs` (one per argument, in order). Symbolic dims are bound
/// from the argument shapes; a mismatch (rank, dtype, an inconsistent symbol)
/// is an error naming the argument. Weights must carry data. Errors from an op
/// name its kind and location; bad shapes or indices never crash.
llvm::Expected<std::vector<Tensor>> interpret(const Module &m, const Function &f,
                                              const std::vector<Tensor> &inputs,
                                              const InterpretOptions &opts = {});

/// Checks that `t` can be passed for argument `arg`: same dtype, same rank,
/// equal constant dims. The message does not name the argument, so that
/// callers can (`genc eval` says `--input NAME: ...`).
llvm::Error checkArgumentType(const Value &arg, const Tensor &t);

using SymbolBindings = std::map<std::string, int64_t>;
/// Binds every symbol in the argument types from the input shapes (a dim such
/// as `2*seq` binds `seq` when it is the only unknown). Errors begin with
/// describe(argument at fault); by default "argument 'NAME'".
llvm::Expected<SymbolBindings>
bindArguments(const Function &f, const std::vector<Tensor> &inputs,
              llvm::function_ref<std::string(const Value &)> describe = nullptr);

} // namespace genc
