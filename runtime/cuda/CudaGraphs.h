// Steps as CUDA graphs: a run of a given shape (for a decode step its token
// count and how its tokens are chosen; for @prefill also its logit rows and
// attention tiles) is the same launches with the same pointers every time
// (its inputs and results go through fixed buffers), so it is captured once
// under a key for that shape and replayed after that.
#pragma once
#include "runtime/cuda/Device.h"

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace genrt::cuda {

class GraphCache {
public:
  explicit GraphCache(const Device &dev) : dev_(dev) {}
  ~GraphCache() { clear(); }
  GraphCache(const GraphCache &) = delete;
  GraphCache &operator=(const GraphCache &) = delete;

  /// Launches the graph of `key` on `stream`; where there is none yet,
  /// captures what `enqueue` puts on the stream first (an error of either
  /// is returned, and nothing is kept).
  Status replayOrCapture(const std::vector<int64_t> &key, CUstream stream, const std::function<Status()> &enqueue);
  bool has(const std::vector<int64_t> &key) const { return graphs_.count(key) != 0; }
  size_t size() const { return graphs_.size(); }
  /// Destroys every graph (before the stream and the context go).
  void clear();

private:
  const Device &dev_;
  std::map<std::vector<int64_t>, CUgraphExec> graphs_;
};

/// @prefill runs as graphs (GENC_CUDA_PREFILL_GRAPHS=1). A shape is captured
/// the second time it comes: a batch's one prefill is not worth a capture,
/// while the server's steps of decode rows with prompt pieces repeat a few
/// shapes (the step budget's token count; the running rows, which set the
/// logit rows and the attention tiles, drift by a few: ~80 shapes over 330
/// mixed steps of 64 clients on the CPU, 2026-12-07). At most kMaxGraphs are
/// kept; past that a new shape runs kernel by kernel.
class PrefillGraphs {
public:
  static constexpr size_t kMaxGraphs = 128, kMaxSeen = 4096;
  explicit PrefillGraphs(const Device &dev) : graphs_(dev) {}
  bool enabled = false;

  bool wants(bool prefill, bool syncEachStep) const { return enabled && prefill && !syncEachStep; }
  /// Whether the run of this shape goes through a graph (it has one, or
  /// came once before and there is room); `out` then holds the key.
  bool take(std::vector<int64_t> &&key, std::vector<int64_t> &out) {
    if (!graphs_.has(key)) {
      if (seen_.size() >= kMaxSeen)
        seen_.clear();
      if (++seen_[key] < 2 || graphs_.size() >= kMaxGraphs) {
        ++eager;
        return false;
      }
      seen_.erase(key);
    }
    out = std::move(key);
    return true;
  }
  Status replayOrCapture(const std::vector<int64_t> &key, CUstream stream, const std::function<Status()> &enqueue) {
    const bool held = graphs_.has(key);
    Status s = graphs_.replayOrCapture(key, stream, enqueue);
    if (s)
      ++(held ? replays : captures);
    return s;
  }
  size_t size() const { return graphs_.size(); }
  // Runs that captured a graph, that replayed one, that ran kernel by
  // kernel (--stats; printed at close).
  int64_t captures = 0, replays = 0, eager = 0;
  void clear() { graphs_.clear(); }

private:
  GraphCache graphs_;
  std::map<std::vector<int64_t>, int> seen_;
};

} // namespace genrt::cuda
