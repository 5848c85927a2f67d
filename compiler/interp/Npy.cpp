#include "compiler/interp/Npy.h"
namespace genc {
llvm::Expected<Tensor> readNpy(const std::string &path) { return llvm::createStringError(llvm::inconvertibleErrorCode(), "npy: not yet written"); }
llvm::Error writeNpy(const std::string &path, const Tensor &t) { return llvm::createStringError(llvm::inconvertibleErrorCode(), "npy: not yet written"); }
} // namespace genc
