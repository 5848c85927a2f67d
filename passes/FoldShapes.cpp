#include "passes/Passes.h"
namespace genc {
llvm::Error foldShapesPass(Module &m) { return llvm::Error::success(); }
} // namespace genc
