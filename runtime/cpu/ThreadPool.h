// A fixed pool of worker threads for the CPU executor's parallel loops
// (GEMM column blocks, attention over tokens and heads, fused bodies over
// token chunks). An idle worker spins on the job counter for a short while
// before it sleeps, and so does the caller waiting for the pieces: a decode
// step hands out a job every few tens of microseconds, and a condition
// variable's wake-up alone cost ~90 µs a GEMM on a 2-core VM.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace genrt::cpu {

/// Physical cores of this machine (hyper-threads share a core's memory
/// bandwidth and its vector units, so they add little here).
int physicalCores();

class ThreadPool {
public:
  /// `threads` in all, the calling thread included (1: everything inline).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /// fn(begin, end) over [0, n) in at most size() contiguous pieces of at
  /// least `grain` items; returns when all are done. Pieces are fixed by n and
  /// size(), so results never depend on which thread ran what.
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

private:
  void work(int index);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)> *job_ = nullptr;
  int64_t n_ = 0, pieces_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
};

} // namespace genrt::cpu
