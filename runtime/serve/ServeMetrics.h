// The scheduler's counters for the server's /metrics: written by the engine
// thread, read from any thread (relaxed atomics: each figure is exact, a
// snapshot of several is not one instant).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace genrt {
namespace serve {

/// A latency histogram with fixed bucket bounds (seconds), Prometheus style
/// (cumulative when read).
class Histogram {
public:
  static constexpr std::array<double, 16> kBounds = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2,
                                                     0.5,   1.0,   2.0,   5.0,  10.0, 20.0, 50.0, 100.0};
  void observe(double seconds) {
    size_t b = 0;
    while (b < kBounds.size() && seconds > kBounds[b])
      ++b;
    counts_[b].fetch_add(1, std::memory_order_relaxed);
    sumMicros_.fetch_add(uint64_t(seconds * 1e6), std::memory_order_relaxed);
  }
  /// Per bucket (the last: above every bound), not cumulative.
  std::vector<uint64_t> counts() const {
    std::vector<uint64_t> out;
    for (const auto &c : counts_)
      out.push_back(c.load(std::memory_order_relaxed));
    return out;
  }
  double sum() const { return double(sumMicros_.load(std::memory_order_relaxed)) * 1e-6; }

private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> sumMicros_{0};
};

struct ServeMetrics {
  // Requests by outcome.
  std::atomic<uint64_t> finished{0}, cancelled{0}, failed{0}, rejected{0};
  std::atomic<uint64_t> promptTokens{0}, generatedTokens{0};
  std::atomic<int64_t> waiting{0}, running{0}, slotsInUse{0};
  std::atomic<uint64_t> steps{0}, stepTokens{0};
  Histogram timeToFirstToken, interTokenLatency;
  /// The steps by kind: [0] decode rows only (on the GPU, a replayed CUDA
  /// graph), [1] with prompt pieces (a @prefill forward over all the step's
  /// tokens). A step's seconds run from its inputs' building to its
  /// forward's end (their counts are the steps of each kind);
  /// `stepPromptTokens` the prompt tokens the [1] steps ran; `afterMicros`
  /// the engine's host work after the forwards (the searches' answers, the
  /// events), summed over every step.
  std::array<Histogram, 2> stepSeconds;
  std::atomic<uint64_t> stepPromptTokens{0}, afterMicros{0};
};

} // namespace serve
} // namespace genrt
