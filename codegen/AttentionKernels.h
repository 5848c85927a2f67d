// CUDA kernels for the plan's attention ops (kv_attention, cross_attention,
// packed_attention), generated per plan: one kernel family per distinct
// configuration (head dim, heads, GQA group, operand layout and storage,
// RoPE, q/k norm, window, relative bias), specialised at compile time and
// compiled by NVRTC into the plan's module with the fused kernels.
//
// Why per plan rather than prebuilt into genrun: every constant the loops
// depend on (head dim, group size, rotary width, vector width) is known when
// the plan is built, so the kernels unroll fully for any model (head dim 80
// or 96 too), and the runtime stays free of nvcc and of a kernel zoo.
// Entry points and parameters: runtime/cuda/AttentionAbi.h.
#pragma once
#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace genc {

/// Choices about the attention kernels that change how fast they run, not
/// what they compute: the compile profile's `cuda` section
/// (driver/CompileProfile.h), whose defaults are these.
struct AttentionKernelOptions {
  /// Query heads an attend block takes at most, 1..8 (a GQA group is halved
  /// until it fits). 4: the compromise of tools/attn_sweep.sh on an H100
  /// (docs/performance.md): 2 is 2% faster at batch 1, 8 is 6% faster at
  /// batch 8 with 1900-token contexts (2026-11-23).
  int headsPerBlock = 4;
  /// KiB of shared memory the decode kernel's cp.async tile stages aim at,
  /// 16..200 (2 to 4 stages; runtime/cuda/AttentionAbi.h, decodeShape).
  /// 72: deeper pipelines (110, 150 KiB) measured no faster at 65,536 keys on
  /// an H100, 2026-11-24, and on an H200, 2026-11-28 (docs/performance.md).
  int stageKib = 72;
  /// attn_N_stream, the TMA decode kernel of long contexts, in 16-bit plans
  /// whose attention shape allows it (runtime/cuda/AttentionAbi.h,
  /// streamEligible); false: the plan has none (smaller, and the tile or
  /// register kernel at every length).
  bool decodeStream = true;
  /// Diagnostics, never in a shipped plan: the decode and merge kernels of
  /// block (0, 0) stamp %globaltimer and clock64 at their stages into
  /// `genc_attn_trace` [10][16] (rows 0..7: the decode kernel's splits
  /// 0..7, row 9: the merge; marks in [0, 8), their clocks in [8, 16)),
  /// which genrun prints with GENC_CUDA_ATTN_TRACE=1. Otherwise the marks
  /// compile to nothing.
  bool trace = false;
};

struct AttentionKernels {
  std::string code;               // config structs and entry points (no prelude)
  std::vector<std::string> names; // families: attn_0, attn_1, ...
};

/// Gives every attention op of @encode / @prefill / @decode_step the
/// attributes `gpu_kernel` (its family) and `gpu_heads_per_block` (the query
/// heads one attend block handles), and where the family has the decode
/// kernel also `gpu_decode_heads_per_block`; returns the families' code. Ops
/// that share a configuration share a family.
AttentionKernels emitAttentionKernels(Module &m, DType activation, const AttentionKernelOptions &options = {});

/// The templates the families instantiate (codegen/AttentionTemplates.cpp),
/// and the decode kernel's (codegen/AttentionDecode.cpp), pasted after them.
const char *attentionTemplates();
/// genc_attn_mark and, with `trace` (AttentionKernelOptions), the stamps'
/// array it writes; without, marks that compile to nothing.
std::string attentionTraceSource(bool trace);
const char *attentionDecodeTemplates();
/// The merge of the decode's splits (codegen/AttentionMerge.cpp), after the decode's.
const char *attentionMergeTemplates();
/// The TMA decode kernel's (codegen/AttentionStream.cpp), after the decode's.
const char *attentionStreamTemplates();
/// The prefill kernel's (codegen/AttentionPrefill.cpp), after the decode's.
const char *attentionPrefillTemplates();

} // namespace genc
