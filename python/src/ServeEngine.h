// What `python3 -m genc.serve` runs under its HTTP layer, in plain C++ (no
// Python here): the plan's decoder and the continuous-batching scheduler
// (runtime/serve/Scheduler.h) on one engine thread, which opens the decoder
// (a CUDA context is per thread) and steps as long as there is work. The
// engine thread never touches Python: it appends each step's events to a
// queue and, when the queue was empty, writes to an eventfd the asyncio
// loop watches (loop.add_reader), so one wake-up drains every event that
// piled up meanwhile.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/serve/Scheduler.h"
#include "runtime/text/Tokenizer.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace genpy {

class ServeEngine {
public:
  /// Opens `planPath` on `device` on a new engine thread and reads its
  /// tokenizer; blocks until done. Null and `err` on failure.
  static std::unique_ptr<ServeEngine> open(const std::string &planPath, const std::string &device,
                                           genrt::serve::SchedulerOptions options, genrt::Status &err);
  /// Stops the engine thread (requests still running are dropped) and
  /// frees the decoder there.
  ~ServeEngine();

  const genrt::ModelInfo &info() const { return info_; }
  const std::string &deviceName() const { return deviceName_; }
  const genrt::text::Tokenizer *tokenizer() const { return tokenizer_.get(); }
  const std::map<std::string, std::string> &chatTemplates() const { return chatTemplates_; }
  const std::map<std::string, std::string> &specialTokens() const { return specialTokens_; }
  int32_t slots() const { return slots_; }
  /// Readable when events are waiting (an eventfd).
  int eventFd() const { return efd_; }

  genrt::Status check(const genrt::serve::Request &request) const { return sched_->check(request); }
  genrt::Status submit(uint64_t id, genrt::serve::Request request) { return sched_->submit(id, std::move(request)); }
  void cancel(uint64_t id) { sched_->cancel(id); }
  void drain() { sched_->drain(); }
  bool idle() const { return sched_->idle(); }
  const genrt::serve::ServeMetrics &metrics() const { return sched_->metrics(); }
  /// Every event queued so far, in order; resets the eventfd.
  std::vector<genrt::serve::Event> takeEvents();

private:
  ServeEngine() = default;
  void run(); // the engine thread's loop

  std::unique_ptr<genrt::Decoder> decoder_;   // created and destroyed on thread_
  std::unique_ptr<genrt::serve::Scheduler> sched_;
  std::unique_ptr<genrt::text::Tokenizer> tokenizer_;
  std::map<std::string, std::string> chatTemplates_, specialTokens_;
  genrt::ModelInfo info_;
  std::string deviceName_;
  int32_t slots_ = 0;
  int efd_ = -1;
  std::atomic<bool> quit_{false};
  std::mutex qm_;
  std::vector<genrt::serve::Event> queue_;
  std::thread thread_;
};

} // namespace genpy
