// Decode steps as CUDA graphs: a step of a given shape (its token count and
// how its tokens are chosen) is the same launches with the same pointers
// every time (its inputs and results go through fixed buffers), so it is
// captured once under a key for that shape and replayed after that.
#pragma once
#include "runtime/cuda/Device.h"

#include <cstdint>
#include <functional>
#include <map>

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
  Status replayOrCapture(int64_t key, CUstream stream, const std::function<Status()> &enqueue);
  /// Destroys every graph (before the stream and the context go).
  void clear();

private:
  const Device &dev_;
  std::map<int64_t, CUgraphExec> graphs_;
};

} // namespace genrt::cuda
