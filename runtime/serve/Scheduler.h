// Continuous batching over one Decoder, device-neutral: the server's
// scheduler. Requests wait in a bounded FIFO queue; at every step the
// scheduler admits the waiting requests that fit into free cache slots
// (first come first served: one that does not fit yet holds back those
// behind it), feeds every running request's next token and, in the same
// forward, pieces of the new prompts up to a token budget (chunked prefill:
// one long prompt cannot stall everyone's next token), then lets each
// request's search (runtime/search/RequestSearch.h, the very code
// generate() runs) take its answers. A request that finishes, fails or is
// cancelled gives its slots back at once. Beam search and n > 1 sampling
// take a slot a row.
//
// A request's greedy tokens do not depend on what shares its steps: its
// search is a batch of one (beam search stops by HF's rule over itself
// alone), and on the CPU every row's logits are the same bits whatever
// else runs in the forward and however its prompt was split (docs/serving.md).
//
// Threads: submit(), cancel() and the metrics from any thread; step() and
// waitForWork() on the one engine thread that owns the decoder.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/search/GenerationConfig.h"
#include "runtime/search/RequestSearch.h"
#include "runtime/serve/ServeEvents.h"
#include "runtime/serve/ServeMetrics.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace genrt {
namespace serve {

struct SchedulerOptions {
  int64_t maxQueue = 256;   // requests waiting for slots; submit() refuses past it
  int64_t stepTokens = 256; // tokens a step runs: decode rows first, then prompt pieces
};

struct Request {
  std::vector<int64_t> promptIds;
  /// Resolved and checked (Scheduler::check): the plan's defaults applied,
  /// max_new_tokens set, stop strings read with the plan's tokenizer.
  GenerationConfig cfg;
  search::LogprobOptions logprobs;
  /// The prompt's log-probabilities (OpenAI's echo with logprobs): -1 none;
  /// k >= 0: each prompt token's and the k likeliest at its position, in
  /// PromptLogprobs events before the first token's.
  int64_t promptLogprobs = -1;
};

class Scheduler {
public:
  using Clock = std::chrono::steady_clock;

  Scheduler(Decoder &decoder, const text::Tokenizer *tokenizer, SchedulerOptions options);
  ~Scheduler();

  /// What generate() would refuse about the request, before it is queued:
  /// the config against the model, the prompt, the rows against the plan's
  /// slots and beams, stop strings against the tokenizer. Any thread.
  Status check(const Request &request) const;
  /// Queues a checked request under `id` (unique). Fails, queuing nothing,
  /// when the queue is full or the scheduler is draining. Any thread.
  Status submit(uint64_t id, Request request);
  /// Drops the request, queued or running (its slots free at the next
  /// step); no further event comes for it. Any thread.
  void cancel(uint64_t id);
  /// Refuses new requests from now on; those queued and running go on.
  void drain();
  /// No request queued or running.
  bool idle() const;

  /// Engine thread: waits until there is work, `timeout` passes or wake().
  void waitForWork(std::chrono::milliseconds timeout);
  /// Any thread: ends a waitForWork now.
  void wake();
  /// Engine thread: one step (admissions, one forward, the searches'
  /// answers). Appends the step's events to `events`. False: nothing ran.
  bool step(std::vector<Event> &events);

  const ServeMetrics &metrics() const { return metrics_; }
  ServeMetrics &metrics() { return metrics_; }
  int32_t totalSlots() const { return totalSlots_; }

private:
  struct Running {
    uint64_t id = 0;
    Request request;
    std::unique_ptr<search::StopRules> stop;
    std::unique_ptr<RequestEvents> events;
    std::unique_ptr<search::RequestSearch> search;
    std::vector<int32_t> slots;
    int64_t promptFed = 0; // decoder prompt tokens in row 0's slot
    Clock::time_point submitted, lastToken;
    bool sawToken = false;
    bool inStep = false;   // added its search's inputs this step
    // This step's prompt chunks that give every token's logits: (chunk
    // index in io_, the prompt position of its first token).
    std::vector<std::pair<size_t, int64_t>> scored;
  };
  struct Waiting {
    uint64_t id;
    Request request;
    Clock::time_point submitted;
  };

  void takeIncoming();
  void admit(std::vector<Event> &events);
  void release(Running &r);
  void fail(Running &r, const std::string &message, std::vector<Event> &events);
  void timeTokens(Running &r, size_t firstEvent, const std::vector<Event> &events, Clock::time_point now);
  void scorePrompt(Running &r, std::vector<Event> &events) const;
  int64_t requestCap() const;

  Decoder &dec_;
  const text::Tokenizer *tok_;
  SchedulerOptions opt_;
  int32_t totalSlots_ = 0;
  ServeMetrics metrics_;

  // Shared with submit() / cancel().
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<Waiting> incoming_;
  std::unordered_set<uint64_t> cancels_;
  int64_t queued_ = 0; // incoming_ + waiting_
  bool draining_ = false;
  bool woken_ = false;

  // Engine thread only.
  std::deque<Waiting> waiting_;
  std::vector<std::unique_ptr<Running>> running_;
  std::vector<int32_t> free_; // free slots, lowest last
  search::StepIO io_;
};

} // namespace serve
} // namespace genrt
