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
/// must have replayed graphs; then again with the decode rows (each its
/// slot's lone token in a run of many) on the prefill kernel's one-token
/// tiles rather than the decode kernel (GENC_CUDA_PREFILL_DECODE=0): those
/// rows within 1% of the largest logit with the same argmax, every other row
/// the same bits. Prints a line each; false on any difference.
bool checkPrefillGraphs(const std::string &planPath);

} // namespace gpucheck
