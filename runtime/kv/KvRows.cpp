#include "runtime/kv/KvRows.h"

#include <algorithm>
#include <atomic>
#include <string>

namespace genrt {

namespace {
// Stamps unique across every KvRows of the process: an executor that
// outlives one Session's table never mistakes the next's slot for one it
// mirrored.
uint64_t freshStamp() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

KvRows::KvRows(const KvLayout &kv)
    : homes_(static_cast<int32_t>(kv.homeRegions())), homeRows_(kv.maxLength), branchRows_(kv.branchRows),
      table_(size_t(kv.slots)), homeOf_(size_t(kv.slots), -1), owner_(size_t(kv.homeRegions()), -1),
      refs_(size_t(kv.regions()), 0), next_(size_t(kv.regions()), 0), stamp_(size_t(kv.slots)),
      stampBefore_(size_t(kv.slots), 0), kept_(size_t(kv.slots), 0) {
  for (uint64_t &st : stamp_)
    st = freshStamp();
}

std::pair<int32_t, int64_t> KvRows::target(int32_t slot) const {
  if (const int32_t h = homeOf_[size_t(slot)]; h >= 0)
    return {h, next_[size_t(h)]};
  if (table_[size_t(slot)].empty())
    return {-1, 0};
  // A branch nobody names starts over.
  const int32_t b = homes_ + slot;
  return {b, refs_[size_t(b)] ? next_[size_t(b)] : 0};
}

Status KvRows::place(const Appends &appends, std::vector<KvRef> &out) const {
  out.clear();
  std::vector<char> seen(table_.size(), 0);
  int32_t nextHome = 0; // homes this run takes: the free ones, in order
  for (const auto &a : appends) {
    const int32_t slot = a.first;
    const int64_t n = a.second;
    if (seen[size_t(slot)]++)
      return Status::error("forward: slot " + std::to_string(slot) + " appends twice in one run");
    auto [region, next] = target(slot);
    if (region < 0) {
      while (nextHome < homes_ && !homeFree(nextHome))
        ++nextHome;
      if (nextHome == homes_)
        return Status::error("forward: slot " + std::to_string(slot) + " starts a sequence, but all " +
                             std::to_string(homes_) + " of the plan's prompts (max batch) are held");
      region = nextHome++;
      next = 0;
    }
    const int64_t rows = isHome(region) ? homeRows_ : branchRows_;
    if (next + n > rows)
      return Status::error(isHome(region)
                               ? "forward: slot " + std::to_string(slot) + "'s prompt region is full (" +
                                     std::to_string(rows) + " positions)"
                               : "forward: slot " + std::to_string(slot) + " would generate more than the plan's " +
                                     std::to_string(rows) + " tokens past a shared prompt (genc --max-new-tokens)");
    for (int64_t i = 0; i < n; ++i)
      out.push_back({region, static_cast<int32_t>(next + i)});
  }
  return Status::ok();
}

void KvRows::append(int32_t slot, KvRef r) {
  if (isHome(r.region) && owner_[size_t(r.region)] < 0) { // a home place() took for this slot
    owner_[size_t(r.region)] = slot;
    homeOf_[size_t(slot)] = r.region;
  }
  table_[size_t(slot)].push_back(r);
  ++refs_[size_t(r.region)];
  next_[size_t(r.region)] = int64_t(r.index) + 1; // place() hands a region's indices out in order
}

void KvRows::release(int32_t slot) {
  for (const KvRef &r : table_[size_t(slot)])
    --refs_[size_t(r.region)];
  table_[size_t(slot)].clear();
  restamp(slot, 0);
  if (const int32_t h = homeOf_[size_t(slot)]; h >= 0) {
    owner_[size_t(h)] = -1;
    homeOf_[size_t(slot)] = -1;
  }
}

void KvRows::copy(const std::vector<int32_t> &dst, const std::vector<int32_t> &src, const std::vector<int64_t> &keep) {
  // The tails the destinations take, read before any changes (a slot may
  // be a source and a destination). A slot that keeps its own positions
  // keeps them as they are, stamp and all.
  auto kept = [&](size_t k) {
    const int64_t n = keep.empty() ? 0 : keep[k];
    return size_t(std::clamp<int64_t>(n, 0, int64_t(std::min(table_[size_t(dst[k])].size(),
                                                                table_[size_t(src[k])].size()))));
  };
  std::vector<size_t> from(dst.size()), at(dst.size() + 1, 0);
  std::vector<KvRef> &tails = scratch_; // every tail, one after another
  tails.clear();
  for (size_t k = 0; k < dst.size(); ++k) {
    if (dst[k] != src[k]) {
      from[k] = kept(k);
      const std::vector<KvRef> &t = table_[size_t(src[k])];
      tails.insert(tails.end(), t.begin() + std::ptrdiff_t(from[k]), t.end());
    }
    at[k + 1] = tails.size();
  }
  for (size_t k = 0; k < dst.size(); ++k) {
    if (dst[k] == src[k])
      continue;
    std::vector<KvRef> &t = table_[size_t(dst[k])];
    for (size_t p = from[k]; p < t.size(); ++p)
      --refs_[size_t(t[p].region)];
    t.resize(from[k]);
    t.insert(t.end(), tails.begin() + std::ptrdiff_t(at[k]), tails.begin() + std::ptrdiff_t(at[k + 1]));
    for (size_t p = from[k]; p < t.size(); ++p)
      ++refs_[size_t(t[p].region)];
    restamp(dst[k], int64_t(from[k]));
  }
}

void KvRows::restamp(int32_t slot, int64_t kept) {
  stampBefore_[size_t(slot)] = stamp_[size_t(slot)];
  kept_[size_t(slot)] = kept;
  stamp_[size_t(slot)] = freshStamp();
}

int64_t KvRows::unchangedSince(int32_t slot, uint64_t stamp) const {
  if (stamp == stamp_[size_t(slot)])
    return int64_t(table_[size_t(slot)].size());
  return stamp == stampBefore_[size_t(slot)] ? kept_[size_t(slot)] : 0;
}

int64_t KvRows::homesInUse() const {
  int64_t n = 0;
  for (int32_t h = 0; h < homes_; ++h)
    n += !homeFree(h);
  return n;
}

} // namespace genrt
