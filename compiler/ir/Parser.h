// Reads the text form written by Printer.h back into a Module.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace genc {

/// Parses a module. Errors read `BUFFER:LINE:COL: message`.
llvm::Expected<std::unique_ptr<Module>> parseModule(const std::string &text,
                                                    const std::string &bufferName = "<input>");

} // namespace genc
