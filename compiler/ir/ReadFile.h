// Reading the compiler's input files (ONNX models, external data, config
// and tokenizer JSON, profiles, IR text, .npy): regular files only. A named
// pipe, a device or a directory is refused at once, where
// llvm::MemoryBuffer::getFile would wait on it (a FIFO with no writer) or
// read without end.
#pragma once
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorOr.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace genc {

/// llvm::MemoryBuffer::getFile for a regular file; anything else gives the
/// error "not a regular file".
llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> readRegularFile(const llvm::Twine &path, bool isText = false,
                                                                   bool requiresNullTerminator = true);

} // namespace genc
