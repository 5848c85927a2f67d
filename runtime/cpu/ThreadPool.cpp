#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>

namespace genrt::cpu {

int physicalCores() {
  // One (package, core) pair per physical core, as the kernel reports them.
  std::set<std::pair<std::string, std::string>> cores;
  for (unsigned cpu = 0; cpu < 4096; ++cpu) {
    std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), pkg(base + "physical_package_id");
    if (!core)
      break;
    std::string c, p;
    core >> c;
    pkg >> p;
    cores.insert({p, c});
  }
  if (!cores.empty())
    return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i)
    workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

namespace {
// Polls `done` for up to ~200 µs (a decode step's jobs come closer than
// that) before the caller blocks.
template <typename Done>
bool spinUntil(Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
  for (int i = 0;; ++i) {
    if (done())
      return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until)
      return false;
  }
}
} // namespace

void ThreadPool::parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  int64_t pieces = std::min<int64_t>(size(), (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1));
  if (pieces <= 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    n_ = n;
    pieces_ = pieces;
    pending_.store(static_cast<int>(pieces - 1));
    generation_.fetch_add(1); // publishes the job to spinning workers
  }
  wake_.notify_all();
  fn(0, n / pieces); // piece 0 on the calling thread
  if (!spinUntil([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_.load() == 0; });
  }
  std::lock_guard<std::mutex> lock(mu_);
  job_ = nullptr;
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  while (true) {
    spinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; });
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
    if (stop_)
      return;
    seen = generation_.load();
    if (index >= pieces_)
      continue;
    const auto *fn = job_;
    int64_t n = n_, pieces = pieces_;
    lock.unlock();
    (*fn)(n * index / pieces, n * (index + 1) / pieces);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> l(mu_); // the caller is checking or waiting under it
      done_.notify_one();
    }
  }
}

} // namespace genrt::cpu
