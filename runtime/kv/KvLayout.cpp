#include "runtime/kv/KvLayout.h"

#include <cstdint>
#include <string>

namespace genrt {
namespace {

// a * b, or -1 when either is negative or the product leaves int64.
int64_t mulChecked(int64_t a, int64_t b) {
  if (a < 0 || b < 0)
    return -1;
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

int64_t addChecked(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

// x rounded up to a multiple of 16, or -1.
int64_t pad16(int64_t x) { return x < 0 || x > INT64_MAX - 15 ? -1 : (x + 15) / 16 * 16; }

int64_t product(std::initializer_list<int64_t> xs) {
  int64_t p = 1;
  for (int64_t x : xs)
    p = mulChecked(p, x);
  return p;
}

} // namespace

int64_t KvLayout::selfBytes() const {
  int64_t n = 0;
  for (const KvCacheLayer &L : layers) {
    n = addChecked(n, product({2, homeRegions(), L.kvHeads, L.capacity, L.headDim,
                               static_cast<int64_t>(dtypeSize(dtype))}));
    if (sharesPrompts())
      n = addChecked(n, product({2, slots, L.kvHeads, L.branchCapacity, L.headDim,
                                 static_cast<int64_t>(dtypeSize(dtype))}));
  }
  return n;
}

KvLayout KvLayout::unshared() const {
  KvLayout out = *this;
  out.homes = 0;
  out.branchRows = 0;
  for (KvCacheLayer &L : out.layers)
    L.branchCapacity = 0;
  return out;
}

int64_t KvLayout::crossBytes() const {
  int64_t n = 0;
  // What crossLayerBytes gives, with every step checked.
  for (const CrossCacheLayer &L : crossLayers) {
    int64_t layer = product({2, crossEntries, L.kvHeads, maxSourceLength, L.headDim,
                             static_cast<int64_t>(dtypeSize(crossDtype()))});
    if (crossI8)
      layer = pad16(addChecked(layer, mulChecked(2, pad16(product({crossEntries, L.kvHeads, maxSourceLength, 4})))));
    n = addChecked(n, layer);
  }
  return n;
}

Status KvLayout::sharded(int64_t n, KvLayout &out) const {
  if (n < 1 || n > 4096)
    return Status::error("KV cache: " + std::to_string(n) + " shards (1 to 4096)");
  if (shards != 1)
    return Status::error("KV cache: a shard's layout cannot be sharded again");
  if (sharesPrompts())
    return Status::error("KV cache: a layout of shared prompts is not sharded (take unshared() first)");
  out = *this;
  if (n == 1)
    return Status::ok(); // the whole cache, rolling windows too
  out.shards = n;
  for (size_t l = 0; l < layers.size(); ++l) {
    KvCacheLayer &L = out.layers[l];
    if (L.capacity < maxLength)
      return Status::error("layer " + std::to_string(l) + " keeps a sliding window of " + std::to_string(L.window) +
                           " positions in a rolling buffer; tree attention shards whole-sequence caches only");
    L.capacity = shardRows(maxLength, 0, n);
  }
  return Status::ok();
}

Status KvLayout::verify() const {
  if (slots <= 0 || maxLength <= 0)
    return Status::error("KV cache: slots and max length must be positive");
  if (slots > INT32_MAX || maxLength > INT32_MAX)
    return Status::error("KV cache: more than 2^31 slots or positions");
  for (size_t l = 0; l < layers.size(); ++l) {
    const KvCacheLayer &L = layers[l];
    if (L.kvHeads <= 0 || L.headDim <= 0 || L.window < 0 || shards < 1 ||
        L.capacity != (shards == 1 ? capacityFor(L.window, maxLength) : shardRows(maxLength, 0, shards)) ||
        L.branchCapacity != (sharesPrompts() ? capacityFor(L.window, branchRows) : 0))
      return Status::error("KV cache: layer " + std::to_string(l) + " has a bad shape");
  }
  if (branchRows < 0 || branchRows > maxLength || homes < 0 || homes > slots || (sharesPrompts() && homes < 1) ||
      (sharesPrompts() && shards != 1))
    return Status::error("KV cache: " + std::to_string(homes) + " shared prompts with branches of " +
                         std::to_string(branchRows) + " rows do not fit " + std::to_string(slots) +
                         " slots of " + std::to_string(maxLength) + " positions");
  // i8 rows: a head_dim that keeps every f32 row scale 4-byte aligned.
  for (size_t l = 0; l < crossLayers.size() && crossI8; ++l)
    if (crossLayers[l].headDim % 4)
      return Status::error("cross-attention cache: i8 rows need a head_dim that is a multiple of 4 (layer " +
                           std::to_string(l) + " has " + std::to_string(crossLayers[l].headDim) + ")");
  for (size_t l = 0; l < crossLayers.size(); ++l)
    if (crossLayers[l].kvHeads <= 0 || crossLayers[l].headDim <= 0 || crossEntries <= 0 || maxSourceLength <= 0)
      return Status::error("cross-attention cache: layer " + std::to_string(l) + " has a bad shape");
  // An executor that does not share prompts allocates unshared(): its size must hold too.
  const int64_t whole = sharesPrompts() ? unshared().selfBytes() : selfBytes();
  if (selfBytes() < 0 || whole < 0 || crossBytes() < 0 || addChecked(whole, crossBytes()) < 0)
    return Status::error("KV cache: its size overflows 64-bit arithmetic");
  return Status::ok();
}

} // namespace genrt
