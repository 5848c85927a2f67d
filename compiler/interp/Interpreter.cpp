#include "compiler/interp/Interpreter.h"
namespace genc {
llvm::Expected<std::vector<Tensor>> interpret(const Module &m, const Function &f, const std::vector<Tensor> &inputs) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "interpreter: not yet written");
}
} // namespace genc
