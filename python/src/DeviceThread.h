// The one thread on which a Generator's decoder lives: opened, run and
// destroyed there. A CUDA context is current per thread, so the thread that
// opened a plan on the GPU must be the one that runs it; the CPU executor
// does not care, and gets the same treatment so that both behave alike.
// Tasks run one at a time, in the order posted.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace genpy {

class DeviceThread {
public:
  DeviceThread() : thread_([this] { loop(); }) {}
  /// Runs every task still queued (the decoder's destruction among them), then joins.
  ~DeviceThread() {
    {
      std::lock_guard<std::mutex> l(m_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  DeviceThread(const DeviceThread &) = delete;
  DeviceThread &operator=(const DeviceThread &) = delete;

  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> l(m_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
  }

private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return quit_ || !tasks_.empty(); });
        if (tasks_.empty())
          return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool quit_ = false;
  std::thread thread_; // last: starts once the members above exist
};

} // namespace genpy
