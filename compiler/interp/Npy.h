// NumPy .npy v1 files (the format `numpy.save` writes): read and write.
#pragma once
#include "compiler/ir/Tensor.h"

#include "llvm/Support/Error.h"

#include <string>

namespace genc {

/// Reads a little-endian, C-order .npy file of dtype f4/f8/f2/i8/i4/i1/u1/b1.
llvm::Expected<Tensor> readNpy(const std::string &path);
llvm::Error writeNpy(const std::string &path, const Tensor &t);

} // namespace genc
