// The CUDA executor's caches beyond their device memory (DeviceMemory, laid
// out by runtime/kv/KvLayout.h): beam reordering by copies (Executor::
// copySlots), the shared prompts' pinned mirror of (region, index) pairs
// staged before each run, and @encode's K/V stored into the cross cache.
// The CPU executor's counterpart is runtime/cpu/KvCache.h.
#pragma once
#include "runtime/cuda/CudaSteps.h"

#include <cstdint>
#include <vector>

namespace genrt::cuda {

/// Beam reordering on the device (Executor::copySlots): per layer, the
/// sources' rows into `scratch` (one layer's K and V of every slot), then
/// into their destinations, so a slot may be both; by genc_kv_copy (two
/// launches a layer, the copy records through pinned `staging` into
/// `records`) where the plan has it and the rows are whole 16-byte words,
/// else by 2D memcpys.
struct KvCopier {
  CUfunction fn = nullptr;
  CUdeviceptr scratch = 0, records = 0;
  void *staging = nullptr;
  int64_t maxRecords = 0;
};
Status copyCacheSlots(StepContext &ctx, const KvCopier &k, const std::vector<int32_t> &dst,
                      const std::vector<int32_t> &src, const std::vector<int64_t> &lengths,
                      const std::vector<int64_t> &from);

/// Executor::copySlots on the cache ctx.layout describes: refused where the
/// beams share their prompt (`sharedPrompts`: reordered by index) or the
/// plan has one beam a sequence; a shard of a tree-attention group moves its
/// own rows of those positions.
Status copySlots(StepContext &ctx, const KvCopier &copier, bool sharedPrompts, const std::vector<int32_t> &dst,
                 const std::vector<int32_t> &src, const std::vector<int64_t> &lengths,
                 const std::vector<int64_t> &from);

/// Shared prompts: the pinned mirror of "kv pairs" (int2 [slots,
/// max_length], the (region, index) of each slot's positions), which a run
/// copies up whole.
struct PairMirror {
  void *host = nullptr; // pinned
  int64_t bytes = 0;
  /// Per slot: the KvRows stamp and the count of leading pairs its mirror
  /// row holds for it (stage).
  std::vector<uint64_t> slotStamp;
  std::vector<int64_t> slotHeld;
  /// The pair entries a run's copy takes: from, count (0: none).
  int64_t from = 0, count = 0;
  /// Each slot of the run gets the pairs of its cached positions and of
  /// the run's new ones in its row (max_length pairs a slot).
  void stage(const ProgramRun &run, const KvLayout &kv);
};

/// @encode's K and V of each cross layer (the program's outputs) into the
/// cross cache entries of the run's segments: 2-D copies, or for an i8
/// cache `crossStoreI8` (genc_cross_store_i8) making codes and row scales.
Status storeCross(const StepContext &ctx, CUfunction crossStoreI8, const CompiledProgram &cp,
                  const ProgramRun &run);

} // namespace genrt::cuda
