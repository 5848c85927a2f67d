// Fused bodies over pieces of the token axis, on the thread pool.
//
// Most bodies (residual add + norm, SwiGLU, embedding gather + norm) compute
// each token's row from that token's rows alone. Such a body runs on pieces
// of a few tokens in parallel: each piece's intermediates stay in cache, and
// its results land directly in their slices of the planned buffers. Whether
// a body is row-wise is decided by evaluation at load, not by reading its op
// kinds: the body runs on a random probe whole and in two pieces, and must
// give the same bits.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/cpu/OpLibrary.h"
#include "runtime/cpu/ThreadPool.h"

#include <map>
#include <string>
#include <vector>

namespace genrt::cpu {

/// Where the token axis of a body value lies: elements per token, and
/// whether the value has one (weights and constants do not).
struct TokenAxis {
  bool present = false;
  int64_t rowElements = 0;
};

/// A body value's token axis: [1.., tokens, c..] with constant dims around
/// the symbol `tokens` and only 1s before it (each token's elements
/// contiguous), or no symbol at all; false for any other shape.
bool tokenAxisOf(const Shape &shape, TokenAxis &out);

/// `shape` with the symbol `tokens` (the only one a row-wise body has) at T.
std::vector<int64_t> shapeAtTokens(const Shape &shape, int64_t T);

class FusedRows {
public:
  /// Decides for `body` (the executor's widened weights for its weight
  /// values); false leaves it to the op-by-op path.
  bool prepare(const Program &body, const std::vector<Tensor> &weights);
  /// body over tokens [0, T) in pieces; `outs` are the results' planned
  /// buffers at T tokens (written in place).
  Error run(const std::vector<Tensor> &weights, const std::map<std::string, int64_t> &symbols,
            ThreadPool &pool, const std::vector<Tensor> &ins, std::vector<Tensor> &outs) const;

private:
  const Program *body_ = nullptr;
  std::vector<TokenAxis> args_, results_;
};

} // namespace genrt::cpu
