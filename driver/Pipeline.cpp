#include "driver/Pipeline.h"

#include "compiler/ir/Printer.h"
#include "compiler/remarks/Progress.h"
#include "compiler/ir/Verifier.h"
#include "passes/PassRegistry.h"

#include <chrono>
#include <iostream>

namespace genc {

llvm::Error runPipeline(Module &m, const std::vector<std::string> &passes,
                        const PipelineOptions &opts) {
  for (const auto &name : opts.printAfter)
    if (!lookupPass(name))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--print-ir-after: unknown pass '%s'", name.c_str());
  for (const auto &name : passes) {
    const PassInfo *p = lookupPass(name);
    if (!p)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown pass '%s' (known: %s)", name.c_str(),
                                     knownPassNames().c_str());
    progress::begin(name);
    auto start = std::chrono::steady_clock::now();
    if (auto e = p->run(m))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", name.c_str(),
                                     llvm::toString(std::move(e)).c_str());
    if (auto e = verifyModule(m))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "after pass %s: %s", name.c_str(),
                                     llvm::toString(std::move(e)).c_str());
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress::finished(name, seconds);
    if (opts.timings)
      opts.timings->emplace_back(name, seconds);
    if (opts.printAfterAll || opts.printAfter.count(name)) {
      std::ostream &os = opts.printStream ? *opts.printStream : std::cerr;
      os << "// ----- IR after " << name << " -----\n";
      printModule(m, os);
    }
  }
  return llvm::Error::success();
}

} // namespace genc
