// infer-shapes: recomputes every result type from the operands (see
// compiler/ir/ShapeInference.h), unifying symbols that must be equal.
#include "compiler/ir/ShapeInference.h"
#include "passes/Passes.h"

namespace genc {

llvm::Error inferShapesPass(Module &m) {
  for (auto &f : m.functions()) {
    ShapeInference si(m);
    if (auto e = si.run(*f))
      return e;
  }
  return llvm::Error::success();
}

} // namespace genc
