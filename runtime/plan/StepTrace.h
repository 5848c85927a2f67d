// The step kernel's trace, read op by op (GENC_CUDA_STEP_TRACE=2): where one
// decode step's time went against the floor of the weight bytes each op
// streams. Pure host code over the stamps the kernel writes, so that it is
// tested without a GPU (tests/unit/runtime/StepTraceTest.cpp).
#pragma once
#include "runtime/plan/StepSchedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace genrt {

/// The stamps of one item (the step kernel writes them): [0] its turn came,
/// [1] its waits were met, [2] it was done (global ns); SM cycles: [3] a
/// warp's mean waiting for its weight pages, [4] the item's work (thread
/// 0's), [5] the copy warp waiting for a free slot (the ring full: pages
/// arrive faster than the compute warps finish them), [6] a warp's mean
/// computing its pages (the products' loops and epilogues), [7] thread 0's
/// from the item's start to its product's (the row op before it), [8] a
/// warp's mean waiting at the item's closing barrier (for the slowest warp),
/// [9] of [3], a warp's mean waiting for its pages to be issued (the copy
/// warp held back by a full ring), [10] thread 0's from the item's start to
/// the end of its routine (before the closing barrier).
constexpr size_t kStepStamps = 11;

/// A line per step op in program order: when its first item's waits were
/// met and when its last item ended (µs from the step's first turn), its
/// items' mean wait and work, the weight bytes it streams, their floor at
/// `bytesPerUs` (the memory's bytes a µs over the whole GPU) and the op's
/// span over that floor; a header first, the step's totals last. Empty
/// where `stamps` does not hold kStepStamps an item.
std::string stepTraceByOp(const StepSchedule &s, const std::vector<uint64_t> &stamps, double bytesPerUs);

/// The same stamps by op kind (GENC_CUDA_STEP_TRACE=1): the step's span and
/// the share of the blocks' time spent waiting, then a line per kind (in
/// name order) with its items' work and waits summed over the blocks, and
/// for products the time a page, and the shares of the item's cycles a warp
/// spent waiting for its pages (and of that, for their issue) and computing them, and the copy warp's
/// share waiting for a free slot ("ring full"). Empty where `stamps` does not hold kStepStamps
/// an item.
std::string stepTraceByKind(const StepSchedule &s, const std::vector<uint64_t> &stamps);

} // namespace genrt
