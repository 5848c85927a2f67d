// Where each slot's positions live when the self cache shares prompts
// (runtime/kv/KvLayout.h, sharesPrompts): the Session's bookkeeping, kept on
// the host, device-neutral; an executor reads it to find a key's row.
//
// Position p of slot s is a pair (region, index): the region's row
// index % rows holds its K/V. The rules that keep every named row intact:
// - a slot appends only to a region it writes: its home when it owns one
//   (it prefilled the prompt there), else its own branch;
// - a region's indices are handed out in order, each once, while any pair
//   names the region (a home also while its owner holds it), so no row a
//   pair names is written again (a rolling window's ring excepted: beams
//   advance together, and a row is reused only once every beam is a window
//   past it);
// - a reorder copies pairs, never rows (Session::reorderSlots).
#pragma once
#include "runtime/kv/KvLayout.h"
#include "runtime/Status.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace genrt {

struct KvRef {
  int32_t region = 0;
  int32_t index = 0;
};

class KvRows {
public:
  KvRows() = default;
  explicit KvRows(const KvLayout &kv);

  /// Position p (< the slot's length) of slot s.
  KvRef at(int32_t slot, int64_t p) const { return table_[size_t(slot)][size_t(p)]; }
  const std::vector<KvRef> &of(int32_t slot) const { return table_[size_t(slot)]; }

  /// (slot, tokens): what one run appends, in run order.
  using Appends = std::vector<std::pair<int32_t, int64_t>>;
  /// The pairs of a run's new tokens, in run order (a slot once). Refuses
  /// (changing nothing) a slot with no positions when every home is held,
  /// and a branch or home that would run past its rows.
  Status place(const Appends &appends, std::vector<KvRef> &out) const;
  /// Records a place place() gave, in run order, once the run has succeeded.
  void append(int32_t slot, KvRef at);
  /// The slot forgets its positions and gives up its home (which stays
  /// taken while other slots name it).
  void release(int32_t slot);
  /// Beam reordering: slot dst[k] takes the positions src[k] had before the
  /// call (a slot may be both). keep[k] (empty: 0): how many leading
  /// positions dst[k] already holds of src[k] (the same tokens, so the same
  /// K/V; at most both lengths): it keeps its own pairs for those and takes
  /// only the rest, so a reorder costs the generated tokens, not the prompt.
  void copy(const std::vector<int32_t> &dst, const std::vector<int32_t> &src, const std::vector<int64_t> &keep = {});

  /// Changes when the slot's positions are replaced or forgotten (copy,
  /// release), not when it appends. Unique in the process: no two tables,
  /// or slots, share one.
  uint64_t stamp(int32_t slot) const { return stamp_[size_t(slot)]; }
  /// How many leading positions of `slot` are the pairs they were when its
  /// stamp was `stamp`: all of them while the stamp holds, what the last
  /// copy kept when `stamp` is the one before it, else 0. An executor that
  /// mirrors the pairs uploads only the rest (CudaExecutor::stagePairs).
  int64_t unchangedSince(int32_t slot, uint64_t stamp) const;

  /// Homes held (owned or named): for tests and stats.
  int64_t homesInUse() const;

private:
  bool isHome(int32_t region) const { return region < homes_; }
  /// Where slot s appends next: (region, first index), or region -1 when it
  /// needs a home (it has no positions and owns none).
  std::pair<int32_t, int64_t> target(int32_t slot) const;
  /// A change to the slot's positions that kept the first `kept`.
  void restamp(int32_t slot, int64_t kept);
  bool homeFree(int32_t h) const { return owner_[size_t(h)] < 0 && refs_[size_t(h)] == 0; }

  int32_t homes_ = 0;
  int64_t homeRows_ = 0, branchRows_ = 0;
  std::vector<std::vector<KvRef>> table_; // per slot: its positions
  std::vector<int32_t> homeOf_;           // per slot: the home it owns, -1
  std::vector<int32_t> owner_;            // per home: the slot owning it, -1
  std::vector<int64_t> refs_;             // per region: pairs naming it
  std::vector<int64_t> next_;             // per region: the next index to hand out
  std::vector<uint64_t> stamp_;           // per slot: see stamp()
  std::vector<uint64_t> stampBefore_;     // per slot: the stamp before the last change
  std::vector<int64_t> kept_;             // per slot: the positions that change kept
  std::vector<KvRef> scratch_;            // copy()'s tails, kept for their memory
};

} // namespace genrt
