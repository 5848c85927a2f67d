// The programs derive-plan makes (@prefill, @decode_step and, for
// encoder-decoder models, @encode): what the passes after it rewrite.
#pragma once
#include "compiler/ir/IR.h"

#include <vector>

namespace genc {

inline std::vector<Function *> planPrograms(Module &m) {
  std::vector<Function *> fs;
  for (auto &f : m.functions())
    if (f->name() == "prefill" || f->name() == "decode_step" || f->name() == "encode")
      fs.push_back(f.get());
  return fs;
}

} // namespace genc
