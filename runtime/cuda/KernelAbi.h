// The version of the contract between the kernels genc generates into a plan
// (attention, token choice, GEMV, fused bodies) and the CUDA executor that
// launches them: their parameter structs and grids. A plan records the
// version it was generated for (`kernels.abi`); the executor refuses another
// one by name rather than launching kernels that would read their
// parameters wrongly. (The CPU executor never runs them.)
//
//   1 (absent): three attention kernels (prologue, attend, combine); one
//     block per row in genc_greedy.
//   2: the attend kernel merges the splits itself (the last split of a
//     token's head group to finish, by a ticket) and appends the token's K/V
//     when the run allows it; attn_N_append does it otherwise. genc_greedy
//     takes a grid of (rows, parts) and a ticket per row.
//   3: tree attention: GencAttnParams gains the shard (N, r) every
//     self-attention kernel reads and masks by, the log-sum-exp out, and the
//     attn_N_weigh / attn_N_finish entries that combine GPUs' outputs.
//   4: GencAttnParams gains `tiles`, the token tiles of attn_N_prefill (the
//     tensor-core kernel of runs of many tokens over 16-bit caches).
//   5: GencBeamRow and GencTokenRow carry their edits as one GencEdits,
//     which gains the sequence bias (id, bias) pairs; genc_beam_topk takes
//     every edit genc_token_pass does (the encoder penalty and the length
//     decay too).
//   6: GencAttnParams gains the L2 prefetch attn_N_merge issues before its
//     wait (pf, pfBytes).
//   7: genc_beam_topk ranks `share` rules a logits row (a prompt's step)
//     and renormalizes a rule's edited row (renormalize_logits) by the max
//     and log-sum-exp genc_beam_norm writes (GencBeamParams gains normParts,
//     norm and share; GencBeamRow's pad is `renormalize`).
//   8: shared prompts: GencTokenPlace gains writeRegion / writeIndex,
//     GencAttnParams pairs, pairStride, homes, branchCapacity; attention
//     families over a plan of shared prompts read their rows through the
//     pairs (SHARED in the family's config).
//   9: GencAttnParams gains the K and V tensor maps (kMap, vMap) of
//     attn_N_stream, the TMA decode kernel of long contexts (its entry takes
//     its parameters as __grid_constant__, 160 threads).
//  10: attn_N_merge runs in kMergeThreads (512) threads and waits on the
//     kernel before it itself, after reading its place.
#pragma once

namespace genrt::cuda {
constexpr int kGencKernelAbi = 10;
} // namespace genrt::cuda
