// gpucheck --prefill-graphs: @prefill runs replayed from CUDA graphs
// (GENC_CUDA_PREFILL_GRAPHS=1, runtime/cuda/CudaGraphs.h) against the same
// runs launched kernel by kernel, bit for bit.
#pragma once
#include <string>

namespace gpucheck {

/// One plan on the GPU: a server-like schedule (decode rows of three slots
/// with a fourth slot's prompt in pieces beside them, every step the same
/// shape at new positions, then a second prompt) run twice, with the graphs
/// off and on; every step's logits must be the same bits and the second run
/// must have replayed graphs. Prints one line; false on any difference.
bool checkPrefillGraphs(const std::string &planPath);

} // namespace gpucheck
