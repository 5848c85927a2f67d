// What a Python Generator holds, in plain C++ (no Python here): the plan's
// decoder on its own DeviceThread, the plan's tokenizer, and generation
// jobs that run there while the Python side waits without the GIL.
#pragma once
#include "DeviceThread.h"
#include "runtime/Decoder.h"
#include "runtime/search/Generate.h"
#include "runtime/search/PromptScores.h"
#include "runtime/search/TextStream.h"
#include "runtime/text/Tokenizer.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace genpy {

/// One generate() call running on the device thread. The Python thread
/// waits on it (in slices, to notice Ctrl-C) and takes its events.
struct Job {
  std::mutex m;
  std::condition_variable cv;
  std::deque<genrt::StreamEvent> events; // streaming jobs only
  bool finished = false;
  genrt::Status status = genrt::Status::ok();
  std::vector<genrt::GenerationResult> results;
  std::vector<std::vector<genrt::search::TokenScore>> scores; // score jobs
  std::atomic<bool> stop{false}; // asked by Python: Ctrl-C, or a stream dropped early

  /// Waits up to `slice` for an event or the end; true when either is there.
  bool waitSlice(std::chrono::milliseconds slice);
  bool isFinished() {
    std::lock_guard<std::mutex> l(m);
    return finished;
  }
};

class Engine {
public:
  /// Opens `planPath` on `device` on a new device thread and reads its
  /// tokenizer. Blocks until done; on failure returns null and sets `err`.
  static std::unique_ptr<Engine> open(const std::string &planPath, const std::string &device,
                                      genrt::Status &err);
  /// Stops the jobs still running, waits for them, then frees the decoder
  /// on its thread.
  ~Engine();

  const genrt::ModelInfo &info() const { return info_; }
  const std::string &deviceName() const { return deviceName_; }
  const genrt::text::Tokenizer *tokenizer() const { return tokenizer_.get(); }
  const std::map<std::string, std::string> &chatTemplates() const { return chatTemplates_; }
  const std::map<std::string, std::string> &specialTokens() const { return specialTokens_; }

  /// Starts generate() of a checked request (check()) on the device thread.
  /// With `stream`, the job collects text events.
  std::shared_ptr<Job> start(genrt::CheckedGeneration request, bool stream);

  /// Starts scoring each prompt (runtime/search/PromptScores.h, the best
  /// `k` at each position) on the device thread, one after the other in
  /// slot 0; the job's scores hold them. Checked first: decoder-only, each
  /// prompt 1 to max_length ids inside the vocabulary.
  genrt::Status startScore(std::vector<std::vector<int64_t>> prompts, int64_t k, std::shared_ptr<Job> &job);

  /// The checks generate() needs before it runs anything (checkGeneration),
  /// made in the caller's thread so that a bad request fails there with a
  /// message naming the prompt.
  genrt::Status check(genrt::GenerationConfig cfg, std::vector<genrt::Prompt> prompts,
                      genrt::CheckedGeneration &out) const;

private:
  Engine() = default;
  /// Keeps `job` among those ~Engine stops (and forgets the finished ones).
  void track(const std::shared_ptr<Job> &job);
  DeviceThread thread_;
  std::unique_ptr<genrt::Decoder> decoder_; // touched only on thread_
  std::unique_ptr<genrt::text::Tokenizer> tokenizer_;
  std::map<std::string, std::string> chatTemplates_, specialTokens_;
  genrt::ModelInfo info_;
  std::string deviceName_;
  int32_t maxSlots_ = 0;
  std::vector<std::weak_ptr<Job>> jobs_; // to stop at close
};

} // namespace genpy
