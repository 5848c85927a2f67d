// A row-wise fused body as one loop over tokens (issue #15's fused loops).
//
// The bodies `fuse` forms are short chains over each token's row — residual
// add + RMSNorm, the SwiGLU split + silu + mul, embedding gather + norm,
// reshapes around a LayerNorm. Op by op each step allocates a tensor for the
// whole run and walks it with generic broadcasting loops; here the body is
// compiled at load into a list of row instructions, and each token runs the
// whole list on its own row (intermediates in a few KB of scratch, results
// written into their planned buffers, split and reshape as views). The row
// functions are the op kernels' own (rmsNormRows, siluRow, ...), so results
// are the same bits — which prepare() checks on a random probe before it
// says yes; anything it does not take stays on the op-by-op path.
#pragma once
#include "runtime/plan/Program.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/KernelError.h"

#include <deque>
#include <map>
#include <string>
#include <vector>

namespace genrt::cpu {

class ThreadPool;

class FusedLoop {
public:
  /// Compiles `body` (the executor's widened weights for its weight values);
  /// false: an op or a shape the loop does not take, or a probe that does
  /// not match the op-by-op result bit for bit.
  bool prepare(const Program &body, const std::vector<Tensor> &weights);
  /// The body over tokens [0, T) (symbols["tokens"]); `outs` are the
  /// results' planned buffers at T tokens, written in place. `pool` may be
  /// null (every token on the calling thread).
  Error run(const std::map<std::string, int64_t> &symbols, ThreadPool *pool, const std::vector<Tensor> &ins,
            std::vector<Tensor> &outs) const;

  /// Where a value's row lies: an argument's or a result's row of the
  /// current token (an argument without a token axis — a weight the op
  /// takes as an operand — is the same data for every token), a scratch
  /// row, or fixed data (weights, constants folded at load).
  struct Loc {
    enum Kind { None, Arg, Out, Temp, Fixed } kind = None;
    int index = -1;       // argument, result or scratch slot
    int64_t offset = 0;   // elements into the row (split pieces)
    int64_t elements = 0; // of the row (Fixed, or an argument without a token axis: of the data)
    const float *fixed = nullptr;
    bool shared = false;  // an argument without a token axis
  };
  enum class Code { Add, Sub, Mul, Div, Silu, Sigmoid, RmsNorm, LayerNorm, Gather, Copy };
  struct Instr {
    Code code = Code::Copy;
    /// Operands and result. Norms: a = x, b = scale, c = bias (kind None:
    /// none); gather: a = the ids argument, b = the table.
    Loc a, b, c, y;
    int64_t n = 0;           // elements of the result row
    int64_t normN = 0;       // norms: the normalised dim; gather: rows of the table
    float eps = 0.f;
  };

private:
  Error runRows(int64_t t0, int64_t t1, const std::vector<Tensor> &ins, std::vector<Tensor> &outs) const;

  const Program *body_ = nullptr;
  std::vector<Instr> code_;
  std::vector<int64_t> argRow_, outRow_; // elements per token (0: no token axis)
  std::vector<int64_t> tempRow_;         // scratch rows' elements
  std::vector<int64_t> tempAt_;          // and where each starts in a token's scratch
  int64_t tempElements_ = 0;
  std::deque<Tensor> constants_;         // folded at load (a deque: values point at them)
};

} // namespace genrt::cpu
