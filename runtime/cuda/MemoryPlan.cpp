// The CUDA executor's device memory plan (CudaExecutorImpl.h): every buffer
// sized from the plan's maximum shapes — weights, caches, the arena, the
// attention workspaces, the token-choice buffers, the staging sizes —
// before DeviceMemory allocates any (a plan that does not fit is refused
// with both numbers).
#include "runtime/cuda/CudaExecutorImpl.h"

#include "runtime/cuda/AttentionAbi.h"
#include "runtime/cuda/GemvAbi.h"
#include "runtime/cuda/NBitsAbi.h"

#include <algorithm>

namespace genrt::cuda {

// Sizes every device buffer before allocating any.
Status CudaExecutor::planMemory(bool tree) {
  const Plan &p = *plan_;
  const KvLayout &kv = kv_;
  int64_t weightBytes = 0;
  for (const Tensor &w : p.weights)
    weightBytes += (static_cast<int64_t>(w.numBytes()) + 255) / 256 * 256;
  mem_.plan("weights", weightBytes);
  mem_.plan("kv cache", kv.selfBytes());
  if (!kv.crossLayers.empty())
    mem_.plan("cross kv cache", kv.crossBytes());
  mem_.plan("arena", p.arenaBytes());
  // The attention workspace: the widest run (prefill chunk, decode slots,
  // a packed @encode) and the widest layer.
  int64_t maxT = 0, maxRows = 0, maxH = 0, maxD = 0, maxStride = 0;
  for (const auto &[name, prog] : p.programs) {
    for (const char *sym : {"tokens", "src_tokens"})
      if (auto it = prog.maxSymbols.find(sym); it != prog.maxSymbols.end())
        maxT = std::max(maxT, it->second);
    if (auto it = prog.maxSymbols.find("rows"); it != prog.maxSymbols.end())
      maxRows = std::max(maxRows, it->second);
    for (const OpInfo &op : prog.ops)
      if (op.kind.find("attention") != std::string::npos) {
        int64_t H = attrInt(op.attrs, "num_heads", 0), KVH = attrInt(op.attrs, "num_kv_heads", H),
                D = attrInt(op.attrs, "head_dim", 0);
        maxH = std::max(maxH, H);
        maxD = std::max(maxD, D);
        maxStride = std::max(maxStride, (H + 2 * KVH) * D);
      }
  }
  maxRows = std::max<int64_t>({maxRows, kv.slots, int64_t(1)});
  maxT = std::max(maxT, kv.slots);
  partialRows_ = 4 * maxT * std::max<int64_t>(maxH, 1);
  mem_.plan("attention scratch", maxT * maxStride * 4);
  mem_.plan("attention partials", partialRows_ * (maxD + 1) * 4);
  mem_.plan("attention tickets", maxT * std::max<int64_t>(maxH, 1) * 4);
  if (tree) { // tree attention: lse [T, H], its max, [T, H, D + 1] (f32)
    mem_.plan("tree lse", maxT * std::max<int64_t>(maxH, 1) * 4);
    mem_.plan("tree lse max", maxT * std::max<int64_t>(maxH, 1) * 4);
    mem_.plan("tree packed", maxT * std::max<int64_t>(maxH, 1) * (maxD + 1) * 4 * kv.shards);
  }
  mem_.plan("token places", maxT * static_cast<int64_t>(sizeof(GencTokenPlace)));
  mem_.plan("prefill tiles", maxT * 8);
  mem_.plan("cross lengths", std::max<int64_t>(kv.crossEntries, 1) * 8);
  for (const char *a : {"input_ids", "positions", "logit_rows"})
    mem_.plan(std::string("argument ") + a, maxT * 8);
  int64_t layerMax = 0;
  for (size_t l = 0; l < kv.layers.size(); ++l)
    layerMax = std::max(layerMax, kv.layerElements(l) * static_cast<int64_t>(dtypeSize(kv.dtype)));
  if (shared_) { // every slot's (region, index) pairs, and their pinned mirror
    pairs_.bytes = kv.slots * kv.maxLength * 8;
    mem_.plan("kv pairs", pairs_.bytes);
  }
  if (p.model.maxBeams > 1 && !shared_) { // K and V of one layer, every slot; the copy records of every layer
    mem_.plan("reorder scratch", 2 * layerMax);
    copier_.maxRecords = 2 * static_cast<int64_t>(kv.layers.size()) * std::max<int64_t>(kv.slots, 1);
    mem_.plan("reorder records", copier_.maxRecords * static_cast<int64_t>(sizeof(GencKvCopy)));
  }
  // The tensor-core GEMVs' parts where blocks split K: for the split any
  // 2-D weight would get, either way round (gemmStep picks by shape), in
  // either entry's groups (32 or 64 weight rows; the 64's planned whether
  // or not the plan has those entries: a few MiB), and any 4/8-bit codes
  // [N, blocks, blob] (K at most blocks x blob x 2).
  int64_t splitBytes = 0, splitGroups = 0;
  auto need = [&](int64_t N, int64_t K, int64_t columns, int64_t partBytes) {
    const int64_t groups = (N + columns - 1) / columns;
    if (const int s = gemvMmaSplit(N, K, dev_.smCount, options_.gemvMmaSplit, columns); s > 1) {
      splitBytes = std::max(splitBytes, groups * s * partBytes);
      splitGroups = std::max(splitGroups, groups);
    }
  };
  for (const Tensor &w : p.weights) {
    if (w.rank() == 2)
      for (int n = 0; n < 2; ++n) {
        need(w.shape()[n], w.shape()[1 - n], kGemvMmaOutputs, kGemvMmaPartBytes);
        need(w.shape()[n], w.shape()[1 - n], kGemvMmaWideOutputs, kGemvMmaWidePartBytes);
      }
    if (w.rank() == 3 && w.dtype() == DType::U8)
      need(w.shape()[0], w.shape()[1] * w.shape()[2] * 2, kNBitsMmaColumns, kNBitsMmaPartBytes);
  }
  mem_.plan("gemv parts", splitBytes);
  mem_.plan("gemv tickets", splitGroups * 4);
  mem_.plan("greedy choices", maxRows * 12);
  greedyParts_ = std::clamp<int64_t>((p.model.vocabSize + kGreedyPartElements - 1) / kGreedyPartElements, 1,
                                     kGreedyMaxParts);
  mem_.plan("greedy parts", maxRows * greedyParts_ * static_cast<int64_t>(sizeof(GencGreedyPart)));
  mem_.plan("greedy tickets", maxRows * 4);
  planTokenChoice(maxRows);
  if (p.model.maxBeams > 1) { // beam candidates on the device (genc_beam_topk)
    beamIdsCap_ = maxRows * 4 * std::max<int64_t>(p.model.maxLength, 1) + 4096;
    beamRules_ = maxRows;
    mem_.plan("beam rules", maxRows * static_cast<int64_t>(sizeof(GencBeamRow)));
    mem_.plan("beam ids", beamIdsCap_ * 4);
    mem_.plan("beam parts", maxRows * greedyParts_ * kBeamMaxK * static_cast<int64_t>(sizeof(GencBeamCand)));
    mem_.plan("beam tickets", maxRows * 4);
    mem_.plan("beam choices", maxRows * kBeamMaxK * static_cast<int64_t>(sizeof(GencBeamCand)));
    mem_.plan("beam norm parts", maxRows * greedyParts_ * static_cast<int64_t>(sizeof(GencGreedyPart)));
    mem_.plan("beam norms", maxRows * 8);
    beamStagingBytes_ = maxRows * static_cast<int64_t>(sizeof(GencBeamRow)) + beamIdsCap_ * 4;
  }
  stagingBytes_ = maxT * (4 * 8 + static_cast<int64_t>(sizeof(GencTokenPlace))) + kv.crossEntries * 8 + 64;
  // The logits come back here, or a row's greedy choice, or its beam
  // candidates (k of 8 bytes: more than a small vocabulary's logits).
  logitsBytes_ = maxRows * std::max<int64_t>(p.model.vocabSize * 4, kBeamMaxK * 8);
  return Status::ok();
}

// genc_token_pass's buffers: a row's rule and the ids it names (staged
// together: one copy), its state, parts, histograms, ticket and its
// processed logits.
void CudaExecutor::planTokenChoice(int64_t maxRows) {
  const Plan &p = *plan_;
  const int64_t V = p.model.vocabSize;
  tokenIdsCap_ = maxRows * 4 * std::max<int64_t>(p.model.maxLength, 1) + 4096;
  tokenStagingBytes_ = maxRows * static_cast<int64_t>(sizeof(GencTokenRow)) + tokenIdsCap_ * 4;
  mem_.plan("token rules", tokenStagingBytes_);
  mem_.plan("token state", maxRows * static_cast<int64_t>(sizeof(GencTokenState)));
  mem_.plan("token parts", maxRows * greedyParts_ * static_cast<int64_t>(sizeof(GencGreedyPart)));
  mem_.plan("token hist", maxRows * kTokenBins * 12);
  mem_.plan("token tickets", maxRows * 4);
  mem_.plan("token work", maxRows * V * 4);
}

} // namespace genrt::cuda
