// dce: erases ops whose results nothing uses, then weights nothing uses.
#include "passes/Passes.h"

namespace genc {

llvm::Error dcePass(Module &m) {
  for (auto &f : m.functions())
    f->eraseDeadOps();
  m.eraseUnusedWeights();
  return llvm::Error::success();
}

} // namespace genc
