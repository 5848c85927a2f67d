// NumPy .npy files (the format `numpy.save` writes): read and write.
//
// Reads format versions 1, 2 and 3, little-endian (or byte-order-free) C-order
// arrays of dtype f4 f8 f2 i8 i4 i1 u1 b1. Fortran order, big-endian data,
// other dtypes, and truncated or malformed files are errors naming the file.
#pragma once
#include "compiler/ir/Tensor.h"

#include "llvm/Support/Error.h"

#include <string>

namespace genc {

llvm::Expected<Tensor> readNpy(const std::string &path);
/// Parses the bytes of a .npy file; `name` is used in error messages.
llvm::Expected<Tensor> parseNpy(const std::string &bytes, const std::string &name);

/// Writes a version 1 file (version 2 if the header needs it). bf16, which
/// NumPy lacks, is written as f4 (exactly).
llvm::Error writeNpy(const std::string &path, const Tensor &t);
std::string serializeNpy(const Tensor &t);

} // namespace genc
