#include "Engine.h"

#include "runtime/Runtime.h"
#include "runtime/text/PlanTokenizer.h"

#include <algorithm>
#include <future>

namespace genpy {

using namespace genrt;

bool Job::waitSlice(std::chrono::milliseconds slice) {
  std::unique_lock<std::mutex> l(m);
  return cv.wait_for(l, slice, [&] { return finished || !events.empty(); });
}

std::unique_ptr<Engine> Engine::open(const std::string &planPath, const std::string &device, Status &err) {
  std::unique_ptr<Engine> e(new Engine());
  std::promise<Status> opened;
  Engine *self = e.get();
  self->thread_.post([&, self] {
    OpenedPlan plan;
    Status s = openPlan(planPath, device, plan);
    self->decoder_ = std::move(plan.decoder);
    self->tokenizer_ = std::move(plan.tokenizer);
    self->chatTemplates_ = plan.chatTemplates;
    self->specialTokens_ = plan.specialTokens;
    if (self->decoder_) {
      self->info_ = self->decoder_->info();
      self->deviceName_ = self->decoder_->deviceName();
      self->maxSlots_ = self->decoder_->maxSlots();
    }
    opened.set_value(s);
  });
  err = opened.get_future().get();
  if (!e->decoder_)
    return nullptr; // ~Engine has nothing to free
  return e;
}

Engine::~Engine() {
  for (const std::weak_ptr<Job> &w : jobs_)
    if (std::shared_ptr<Job> job = w.lock())
      job->stop = true;
  // Queued behind any job still running; the thread's destructor (after
  // this body) runs it and joins.
  // (A std::function must be copyable: the decoder travels as a shared_ptr.)
  std::shared_ptr<Decoder> d(std::move(decoder_));
  thread_.post([d = std::move(d)]() mutable { d.reset(); });
}

Status Engine::check(GenerationConfig cfg, std::vector<Prompt> prompts, CheckedGeneration &out) const {
  cfg.tokenizer = tokenizer_.get(); // stop_strings are read with the plan's
  return checkGeneration(info_, maxSlots_, cfg, std::move(prompts), out);
}

std::shared_ptr<Job> Engine::start(CheckedGeneration request, bool stream) {
  auto job = std::make_shared<Job>();
  track(job);
  // The job, not the engine, owns what the task needs beyond the decoder,
  // and the decoder outlives every task (~Engine queues behind them).
  thread_.post([this, job, stream, request = std::move(request)] {
    auto push = [&](StreamEvent &&ev) {
      {
        std::lock_guard<std::mutex> l(job->m);
        job->events.push_back(std::move(ev));
      }
      job->cv.notify_all();
    };
    auto stop = [&] { return job->stop.load(); };
    // Without a stream the observer only answers stop requests: no tokenizer,
    // so no text is decoded, and the events go nowhere.
    TextStreamObserver observer(stream ? tokenizer_.get() : nullptr,
                                      stream ? TextStreamObserver::Sink(push) : [](StreamEvent &&) {},
                                      stop);
    std::vector<GenerationResult> results;
    Status s = generate(*decoder_, request, results, nullptr, &observer);
    {
      std::lock_guard<std::mutex> l(job->m);
      job->status = s;
      job->results = std::move(results);
      job->finished = true;
    }
    job->cv.notify_all();
  });
  return job;
}

void Engine::track(const std::shared_ptr<Job> &job) {
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), [](const std::weak_ptr<Job> &w) { return w.expired(); }),
              jobs_.end());
  jobs_.push_back(job);
}

Status Engine::startScore(std::vector<std::vector<int64_t>> prompts, int64_t k, std::shared_ptr<Job> &job) {
  if (info_.encoderDecoder)
    return Status::error("score() is for decoder-only models (an encoder-decoder's prompt is its encoder's source)");
  if (k < 0)
    return Status::error("top_logprobs must be 0 or more (got " + std::to_string(k) + ")");
  for (size_t n = 0; n < prompts.size(); ++n) {
    const std::vector<int64_t> &ids = prompts[n];
    const std::string which = "prompt " + std::to_string(n);
    if (ids.empty())
      return Status::error(which + " is empty");
    if (int64_t(ids.size()) > info_.maxLength)
      return Status::error(which + " has " + std::to_string(ids.size()) + " tokens, more than the plan's max length " +
                           std::to_string(info_.maxLength));
    for (int64_t id : ids)
      if (id < 0 || id >= info_.vocabSize)
        return Status::error(which + ": token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                             std::to_string(info_.vocabSize) + ")");
  }
  job = std::make_shared<Job>();
  track(job);
  thread_.post([this, job, k, prompts = std::move(prompts)] {
    std::vector<std::vector<search::TokenScore>> scores(prompts.size());
    Status s = Status::ok();
    for (size_t n = 0; s && n < prompts.size() && !job->stop; ++n)
      s = search::scorePrompt(*decoder_, 0, prompts[n], k, scores[n]);
    {
      std::lock_guard<std::mutex> l(job->m);
      job->status = s;
      job->scores = std::move(scores);
      job->finished = true;
    }
    job->cv.notify_all();
  });
  return Status::ok();
}

} // namespace genpy
