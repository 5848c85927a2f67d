#include "ServeEngine.h"

#include "runtime/Runtime.h"

#include <future>
#include <sys/eventfd.h>
#include <unistd.h>

namespace genpy {

using namespace genrt;

std::unique_ptr<ServeEngine> ServeEngine::open(const std::string &planPath, const std::string &device,
                                               serve::SchedulerOptions options, Status &err) {
  std::unique_ptr<ServeEngine> e(new ServeEngine());
  e->efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e->efd_ < 0) {
    err = Status::error("cannot create an eventfd for the server's events");
    return nullptr;
  }
  std::promise<Status> opened;
  ServeEngine *self = e.get();
  e->thread_ = std::thread([self, planPath, device, options, &opened] {
    OpenedPlan plan;
    Status s = openPlan(planPath, device, plan);
    self->decoder_ = std::move(plan.decoder);
    self->tokenizer_ = std::move(plan.tokenizer);
    self->chatTemplates_ = std::move(plan.chatTemplates);
    self->specialTokens_ = std::move(plan.specialTokens);
    if (self->decoder_) {
      self->info_ = self->decoder_->info();
      self->deviceName_ = self->decoder_->deviceName();
      self->slots_ = self->decoder_->maxSlots();
      self->sched_ = std::make_unique<serve::Scheduler>(*self->decoder_, self->tokenizer_.get(), options);
    }
    opened.set_value(s);
    if (self->decoder_)
      self->run();
    self->sched_.reset();
    self->decoder_.reset();
  });
  err = opened.get_future().get();
  if (!e->decoder_) {
    e->thread_.join();
    ::close(e->efd_);
    e->efd_ = -1;
    return nullptr;
  }
  return e;
}

ServeEngine::~ServeEngine() {
  quit_ = true;
  if (sched_)
    sched_->wake();
  if (thread_.joinable())
    thread_.join();
  if (efd_ >= 0)
    ::close(efd_);
}

void ServeEngine::run() {
  std::vector<serve::Event> events;
  while (!quit_) {
    const bool ran = sched_->step(events);
    if (!events.empty()) {
      bool wasEmpty;
      {
        std::lock_guard<std::mutex> l(qm_);
        wasEmpty = queue_.empty();
        if (wasEmpty)
          queue_.swap(events);
        else
          std::move(events.begin(), events.end(), std::back_inserter(queue_));
      }
      events.clear();
      if (wasEmpty) {
        const uint64_t one = 1;
        ssize_t n = ::write(efd_, &one, sizeof one);
        (void)n; // the counter cannot overflow: the reader resets it
      }
    }
    if (!ran)
      sched_->waitForWork(std::chrono::milliseconds(100));
  }
}

std::vector<serve::Event> ServeEngine::takeEvents() {
  uint64_t count;
  ssize_t n = ::read(efd_, &count, sizeof count);
  (void)n; // EAGAIN: nothing was signalled, the queue may still hold events
  std::vector<serve::Event> out;
  std::lock_guard<std::mutex> l(qm_);
  out.swap(queue_);
  return out;
}

} // namespace genpy
