// The layout of the KV caches: one description that the plan writer's
// stats, the loader and every executor use, so that what genc reports is
// what an executor allocates and how it indexes.
//
// Self-attention, per layer: K and V, each [slots, kv_heads, capacity,
// head_dim] in `dtype` (the plan's activation dtype). A slot holds one
// sequence (one beam); its keys of one head are contiguous, so decode
// attention streams them with 16-byte loads and a reorder copies whole rows.
// capacity = max_length, or `window` for a sliding-window layer: a rolling
// buffer where position p lives in row p % capacity.
//
// Tree attention (genrun --gpus N) shards the self-attention cache by
// position: position p lives on shard p % N, in its row p / N, so every
// shard holds an equal share of any sequence at any length (a decode step's
// attention splits evenly whatever the context) and a step's new K/V go to
// one shard. A shard's layout is this one with capacity ceil(max_length /
// N); a rolling window is not sharded (its rows wrap by position).
//
// Shared prompts (FastSeq; `genc --max-new-tokens N` with beams): the self
// cache is regions, not one per slot. `homes` regions of `capacity` rows
// hold a prompt, once per batch item, and the tokens its owner (the slot
// that prefilled it) generates; then one branch a slot, of `branchCapacity`
// rows (N, or a shorter window), holds the tokens that slot generates off a
// prompt it shares. A slot's positions are named by (region, index) pairs
// (runtime/kv/KvRows.h): its prompt in a home, each generated token in the
// region of the beam that wrote it, so a beam reorder moves those pairs and
// no rows. Index i of a region is its row i % rows (rolling windows wrap).
// Without sharing each slot is its own region (homes = slots, no branches)
// and the index of a position is the position: the layout above.
//
// Cross-attention (encoder-decoder), per layer: K and V, each [entries,
// kv_heads, max_source_length, head_dim]. An entry holds one encoded source; every
// beam of a batch item reads its item's entry (FastSeq: never one copy per
// beam), so there are max_batch entries whatever max_beams is.
#pragma once
#include "runtime/DType.h"
#include "runtime/Status.h"

#include <cstdint>
#include <vector>

namespace genrt {

struct KvCacheLayer {
  int64_t kvHeads = 0, headDim = 0;
  int64_t window = 0;         // 0: the whole sequence; else the last `window` positions
  int64_t capacity = 0;       // rows per home region (per slot without sharing) and head
  int64_t branchCapacity = 0; // rows per branch and head (0: no sharing)
};

struct CrossCacheLayer {
  int64_t kvHeads = 0, headDim = 0;
};

struct KvLayout {
  DType dtype = DType::F32;
  int64_t slots = 0;           // max_batch * max_beams
  int64_t maxLength = 0;       // positions per sequence (the decoder's)
  int64_t maxSourceLength = 0; // encoder-decoder: tokens per source
  std::vector<KvCacheLayer> layers;
  int64_t shards = 1;          // tree attention: the self cache is one of `shards`
  int64_t crossEntries = 0;    // max_batch (encoder-decoder only)
  std::vector<CrossCacheLayer> crossLayers;
  /// The cross cache held as i8 (genc --cross-kv-dtype i8): each row of
  /// head_dim values as round(x / s) in [-127, 127], s = max |x| / 127 kept
  /// beside it as f32 (runtime/kv/Int8Rows.h). Else in `dtype`.
  bool crossI8 = false;
  DType crossDtype() const { return crossI8 ? DType::I8 : dtype; }
  int64_t homes = 0;           // shared prompts: regions holding one (max_batch)
  int64_t branchRows = 0;      // shared prompts: tokens a slot generates off one (0: no sharing)

  bool sharesPrompts() const { return branchRows > 0; }
  /// Regions of `capacity` rows: the homes, or one a slot.
  int64_t homeRegions() const { return sharesPrompts() ? homes : slots; }
  /// All regions: the homes, then (sharing) slot s's branch at homes + s.
  int64_t regions() const { return homeRegions() + (sharesPrompts() ? slots : 0); }
  int64_t branchOf(int64_t slot) const { return homes + slot; }
  /// Rows of layer l's region r (per head).
  int64_t regionRows(size_t l, int64_t r) const {
    return r < homeRegions() ? layers[l].capacity : layers[l].branchCapacity;
  }
  /// This layout with every slot its own region: for executors that do not
  /// read by (region, index) yet (they copy a beam's rows on reorder).
  KvLayout unshared() const;

  /// Rows a layer keeps per slot and head: the rolling-window rule.
  static int64_t capacityFor(int64_t window, int64_t maxLength) {
    return window > 0 && window < maxLength ? window : maxLength;
  }
  /// Adds a self-attention layer with its capacities worked out (set
  /// branchRows first).
  void addLayer(int64_t kvHeads, int64_t headDim, int64_t window) {
    layers.push_back({kvHeads, headDim, window, capacityFor(window, maxLength),
                      sharesPrompts() ? capacityFor(window, branchRows) : 0});
  }

  /// Tree attention: the shard holding position p, its row there, and how
  /// many of the positions [0, n) shard r holds (its rows [0, that)).
  static int64_t shardOf(int64_t p, int64_t shards) { return p % shards; }
  static int64_t shardRow(int64_t p, int64_t shards) { return p / shards; }
  static int64_t shardRows(int64_t n, int64_t shard, int64_t shards) {
    return n > shard ? (n - shard + shards - 1) / shards : 0;
  }
  /// The layout of one of `n` shards (n >= 1): each self-attention layer
  /// keeps ceil(max_length / n) rows per slot and head; cross caches are
  /// whole on every shard. Refused for a rolling-window layer.
  Status sharded(int64_t n, KvLayout &out) const;

  /// Elements of one layer's K (or V) for all regions.
  int64_t layerElements(size_t l) const {
    const KvCacheLayer &L = layers[l];
    return (homeRegions() * L.capacity + (sharesPrompts() ? slots * L.branchCapacity : 0)) * L.kvHeads * L.headDim;
  }
  /// Element offset of (region, kv head, index) in a layer's K (or V):
  /// without sharing, (slot, kv head, position).
  int64_t offset(size_t l, int64_t region, int64_t head, int64_t index) const {
    const KvCacheLayer &L = layers[l];
    const int64_t H = homeRegions();
    if (region < H)
      return ((region * L.kvHeads + head) * L.capacity + index % L.capacity) * L.headDim;
    return (H * L.kvHeads * L.capacity + ((region - H) * L.kvHeads + head) * L.branchCapacity +
            index % L.branchCapacity) *
           L.headDim;
  }
  /// Where layer l's K starts in the self cache (elements; its V follows
  /// at + layerElements(l)): the layers lie K, V, K, V, ... in order.
  int64_t layerBase(size_t l) const {
    int64_t at = 0;
    for (size_t i = 0; i < l; ++i)
      at += 2 * layerElements(i);
    return at;
  }
  /// The cross cache, in bytes: layer l holds K's elements, V's, then
  /// (i8) K's row scales and V's, f32 [entry, kv head, position] each, each
  /// scale block and the layer padded to 16 bytes (the decode kernel copies
  /// a layer's codes in 16-byte words).
  int64_t crossLayerElements(size_t l) const {
    const CrossCacheLayer &L = crossLayers[l];
    return crossEntries * L.kvHeads * maxSourceLength * L.headDim;
  }
  /// Bytes of layer l's K (or V) elements; V's start that far after K's.
  int64_t crossHalfBytes(size_t l) const {
    return crossLayerElements(l) * static_cast<int64_t>(dtypeSize(crossDtype()));
  }
  /// Bytes from layer l's K row scales to its V row scales (0 unless i8).
  int64_t crossScaleBytes(size_t l) const {
    const CrossCacheLayer &L = crossLayers[l];
    return crossI8 ? (crossEntries * L.kvHeads * maxSourceLength * 4 + 15) / 16 * 16 : 0;
  }
  int64_t crossLayerBytes(size_t l) const {
    const int64_t n = 2 * (crossHalfBytes(l) + crossScaleBytes(l));
    return crossI8 ? (n + 15) / 16 * 16 : n;
  }
  /// Where layer l starts in the cross cache (bytes): K, V, their scales.
  int64_t crossLayerByteBase(size_t l) const {
    int64_t at = 0;
    for (size_t i = 0; i < l; ++i)
      at += crossLayerBytes(i);
    return at;
  }
  /// Element offset of (entry, kv head, position)'s row in a layer's K (or
  /// V); the row's scale is number offset / head_dim of K's (V's) scales.
  int64_t crossOffset(size_t l, int64_t entry, int64_t head, int64_t position) const {
    const CrossCacheLayer &L = crossLayers[l];
    return ((entry * L.kvHeads + head) * maxSourceLength + position) * L.headDim;
  }

  /// Byte offsets within layer l (from crossLayerByteBase(l)) of the row
  /// (entry, kv head, position) of its K (v false) or V: its elements, and
  /// (i8) its scale. Every writer and reader of the cross cache uses these.
  int64_t crossRowByte(size_t l, bool v, int64_t entry, int64_t head, int64_t position) const {
    return (v ? crossHalfBytes(l) : 0) +
           crossOffset(l, entry, head, position) * static_cast<int64_t>(dtypeSize(crossDtype()));
  }
  int64_t crossScaleByte(size_t l, bool v, int64_t entry, int64_t head, int64_t position) const {
    return 2 * crossHalfBytes(l) + (v ? crossScaleBytes(l) : 0) +
           crossOffset(l, entry, head, position) / crossLayers[l].headDim * 4;
  }

  /// Bytes of K and V of every self-attention / cross-attention layer.
  int64_t selfBytes() const;
  int64_t crossBytes() const;

  /// Checks the sizes before anything is allocated: positive dims and no
  /// overflow of the byte counts (a plan is untrusted input).
  Status verify() const;
};

} // namespace genrt
