// Vectorized memory access in the generated kernels. A thread takes `width`
// contiguous elements of the output's last axis, one per unrolled "lane",
// reads every argument indexed by that same axis with one vector load and
// writes its results with one vector store: 16-byte accesses, 4 x f32 or
// 8 x f16/bf16 (genc_vload / genc_vstore in the prelude).
//
// The width is fixed at compile time from the last dim, which is constant in
// practice (hidden size, head dim) even where the shape is symbolic: the
// largest power of two, up to 16 bytes of the kernel's narrowest float
// storage type, that divides it. A symbolic or odd last dim keeps the scalar
// loop.
//
// Alignment: a vector starts at element row * n + j0 with n and j0 multiples
// of the width, so it is aligned to its size whenever the buffer's base is
// 16-byte aligned. Plans guarantee that: arena and blob offsets are
// multiples of 64 (passes/PlanMemory.cpp, codegen/PlanWriter.cpp) and the
// loader rejects buffers that are not 16-byte aligned.
#pragma once
#include "compiler/ir/IR.h"

#include <set>
#include <string>
#include <vector>

namespace genc {

/// The variables of one vectorized loop: the thread's first element `j0` of
/// the last axis, the unrolled `lane`, and `j` = j0 + lane, the index the
/// body is written in.
struct Lanes {
  int width = 1;
  std::string j, j0, lane;
  std::string *loads = nullptr; // vector loads, before the lane loop
  std::string indent;           // of the loads
  std::set<std::string> loaded; // arguments read as vectors (for the legend)
};

/// 16 bytes of the narrowest float storage type among `storage` (4 for f32,
/// 8 for f16/bf16); 4 where there is none.
int maxVectorWidth(const std::vector<DType> &storage);

/// Lanes per thread for a loop over a last axis of `n` elements: the largest
/// power of two <= maxWidth dividing n; 1 (scalar) where n is symbolic.
int vectorWidth(const Dim &n, int maxWidth);

/// `alignas(16) T arr[width];` and its load from `ptr` (an aligned element
/// address), at `ln.indent`.
std::string vectorLoadText(const Lanes &ln, const std::string &type, const std::string &arr,
                           const std::string &ptr);

/// The unrolled lane loop: `j` defined from j0 and lane where the body uses
/// it, then `body`, at `indent` (the body itself is indented two more).
std::string laneLoopText(const Lanes &ln, const std::string &indent, const std::string &body);

} // namespace genc
