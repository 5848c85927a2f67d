// Entry points of the passes, one per file in passes/.
#pragma once
#include "compiler/ir/IR.h"

#include "llvm/Support/Error.h"

namespace genc {

llvm::Error inferShapesPass(Module &m);
llvm::Error foldShapesPass(Module &m);
llvm::Error dcePass(Module &m);
llvm::Error canonicalizePass(Module &m);
llvm::Error raiseAttentionPass(Module &m);
llvm::Error derivePlanPass(Module &m);
llvm::Error quantizeWeightsPass(Module &m);
llvm::Error fuseGemmsPass(Module &m);
llvm::Error foldAttentionIoPass(Module &m);
llvm::Error fusePass(Module &m);
llvm::Error shareFusedBodiesPass(Module &m);
llvm::Error planMemoryPass(Module &m);
/// The decode-step kernel's persistent blocks unless the profile says
/// (cuda.step_blocks): an H100's or H200's SMs.
constexpr int64_t kDefaultStepBlocks = 132;
llvm::Error scheduleStepPass(Module &m);

} // namespace genc
