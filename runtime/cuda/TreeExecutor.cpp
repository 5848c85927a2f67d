#include "runtime/cuda/TreeExecutor.h"

#include "runtime/cuda/CudaApi.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace genrt::cuda {
namespace {

// A thread that owns one GPU's executor: its context is current there, so
// every call to that executor runs on it. One task at a time.
class Worker {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    std::function<Status()> task;
    bool pending = false, done = false, stop = false;
    Status result = Status::ok();
  };

public:
  Worker() : state_(std::make_shared<State>()) {
    thread_ = std::thread([s = state_] {
      std::unique_lock<std::mutex> lock(s->m);
      for (;;) {
        s->cv.wait(lock, [&] { return s->pending || s->stop; });
        if (s->stop)
          return;
        auto task = std::move(s->task);
        s->pending = false;
        lock.unlock();
        Status r = task();
        lock.lock();
        s->result = r;
        s->done = true;
        s->cv.notify_all();
      }
    });
  }
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(state_->m);
      state_->stop = true;
    }
    state_->cv.notify_all();
    if (hung_)
      thread_.detach(); // stuck in a call that never returns: left to the process's exit
    else
      thread_.join();
  }
  void post(std::function<Status()> task) {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->task = std::move(task);
    state_->pending = true;
    state_->done = false;
    state_->cv.notify_all();
  }
  /// The task's result; an error if it has not finished within `seconds`.
  Status wait(double seconds) {
    std::unique_lock<std::mutex> lock(state_->m);
    if (!state_->cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return state_->done; })) {
      hung_ = true;
      return Status::error("no answer in " + std::to_string(static_cast<int>(seconds)) + " s");
    }
    return state_->result;
  }

private:
  std::shared_ptr<State> state_;
  std::thread thread_;
  bool hung_ = false;
};

class TreeExecutor final : public Executor {
public:
  ~TreeExecutor() override {
    // Each executor is closed on its own thread (its context is current there).
    for (size_t i = 0; i < workers_.size(); ++i)
      if (replicas_[i] && !broken_)
        workers_[i]->post([this, i] {
          replicas_[i].reset();
          return Status::ok();
        });
    for (size_t i = 0; i < workers_.size() && !broken_; ++i)
      workers_[i]->wait(timeoutS_);
    if (broken_)
      for (auto &r : replicas_)
        r.release(); // a GPU stopped answering: nothing more is asked of any
  }

  Status init(std::shared_ptr<const Plan> plan, int local, int ranks, int first, const NcclUniqueId &id,
              const NcclApi *nccl, double timeoutS) {
    timeoutS_ = timeoutS;
    nccl_ = nccl;
    ranks_ = ranks;
    replicas_.resize(local);
    for (int i = 0; i < local; ++i)
      workers_.push_back(std::make_unique<Worker>());
    // Every GPU's executor at once: NCCL's communicator set-up waits for all.
    return all(
        [&, plan](int i) {
          Status s = Status::ok();
          replicas_[i] = makeCudaReplica(plan, TreeRank{i, first + i, ranks, id, nccl}, s);
          return s;
        },
        std::max(600.0, timeoutS));
  }

  std::string deviceName() const override {
    return "cuda x" + std::to_string(ranks_) + " (tree attention, NCCL " + std::to_string(nccl_->version) +
           "; GPU 0 " + replicas_[0]->deviceName().substr(6) + ")";
  }
  int64_t memoryBytes() const override {
    int64_t n = 0;
    for (const auto &r : replicas_)
      n += r->memoryBytes();
    return n;
  }
  std::string memoryReport() const override {
    return "per GPU " + replicas_[0]->memoryReport() + " x " + std::to_string(replicas_.size());
  }

  Status run(const ProgramRun &run, float *logits) override {
    return all([&](int i) { return replicas_[i]->run(run, i == 0 ? logits : nullptr); });
  }
  bool choosesGreedy() const override { return replicas_[0]->choosesGreedy(); }
  Status runGreedy(const ProgramRun &run, int64_t *tokens, float *logprobs) override {
    return all([&](int i) {
      return replicas_[i]->runGreedy(run, i == 0 ? tokens : nullptr, i == 0 ? logprobs : nullptr);
    });
  }
  bool choosesBeams(int64_t k) const override { return replicas_[0]->choosesBeams(k); }
  Status runBeams(const ProgramRun &run, const std::vector<BeamRow> &rows, int64_t k, int32_t *tokens,
                  float *scores) override {
    return all([&](int i) {
      return replicas_[i]->runBeams(run, rows, k, i == 0 ? tokens : nullptr, i == 0 ? scores : nullptr);
    });
  }
  Status encode(const ProgramRun &run) override {
    return all([&](int i) { return replicas_[i]->encode(run); });
  }
  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                   const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) override {
    return all([&](int i) { return replicas_[i]->copySlots(dst, src, lengths, from); });
  }

private:
  // `task(i)` on every GPU's thread at once; the first error, naming its GPU.
  // (A replica's own collectives time out and abort themselves; this
  // deadline is the backstop for a call that never returns.)
  Status all(const std::function<Status(int)> &task, double seconds = 0) {
    if (broken_)
      return Status::error("tree attention: a GPU of the group stopped answering earlier");
    for (size_t i = 0; i < workers_.size(); ++i)
      workers_[i]->post([&task, i] { return task(static_cast<int>(i)); });
    Status first = Status::ok();
    for (size_t i = 0; i < workers_.size(); ++i) {
      Status s = workers_[i]->wait(seconds > 0 ? seconds : timeoutS_ + 60);
      if (!s && first)
        first = Status::error("GPU " + std::to_string(i) + ": " + s.message());
      if (!s && s.message().rfind("no answer", 0) == 0)
        broken_ = true;
    }
    return first;
  }

  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<Executor>> replicas_;
  const NcclApi *nccl_ = nullptr;
  int ranks_ = 1;
  double timeoutS_ = 120;
  bool broken_ = false;
};

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The group's NCCL id: made here (rank 0, and written to the id file when
// there is one), or read from the file rank 0's process wrote.
Status groupId(const NcclApi &nccl, int first, double timeoutS, NcclUniqueId &id) {
  const char *file = std::getenv("GENC_NCCL_ID_FILE");
  if (first == 0) {
    if (Status s = nccl.check(nccl.getUniqueId(&id), "ncclGetUniqueId"); !s)
      return s;
    if (file && *file) {
      const std::string tmp = std::string(file) + ".tmp" + std::to_string(getpid());
      std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
      if (std::rename(tmp.c_str(), file) != 0)
        return Status::error(std::string("GENC_NCCL_ID_FILE: cannot write ") + file);
    }
    return Status::ok();
  }
  if (!file || !*file)
    return Status::error("GENC_NCCL_FIRST_RANK > 0 needs GENC_NCCL_ID_FILE (where rank 0 writes the NCCL id)");
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    std::ifstream in(file, std::ios::binary);
    if (in && in.read(id.internal, sizeof id.internal))
      return Status::ok();
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeoutS)
      return Status::error(std::string("GENC_NCCL_ID_FILE: ") + file + " did not appear in " +
                           std::to_string(static_cast<int>(timeoutS)) + " s (is rank 0's process running?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace

std::unique_ptr<Executor> makeTreeExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                           Status &err) {
  const int local = std::max(1, opts.gpus);
  const DriverApi *api = driver(err);
  if (!api)
    return nullptr;
  int count = 0;
  api->cuDeviceGetCount(&count);
  if (local > count) {
    err = Status::error("--gpus " + std::to_string(local) + ": this machine shows " + std::to_string(count) +
                        " GPU" + (count == 1 ? "" : "s"));
    return nullptr;
  }
  const NcclApi *nccl = cuda::nccl(err);
  if (!nccl)
    return nullptr;
  const int ranks = envInt("GENC_NCCL_RANKS", local), first = envInt("GENC_NCCL_FIRST_RANK", 0);
  if (ranks < local || first < 0 || first + local > ranks) {
    err = Status::error("GENC_NCCL_RANKS " + std::to_string(ranks) + " / GENC_NCCL_FIRST_RANK " +
                        std::to_string(first) + " do not hold this process's " + std::to_string(local) + " GPUs");
    return nullptr;
  }
  const char *to = std::getenv("GENC_NCCL_TIMEOUT_S");
  const double timeoutS = to && std::atof(to) > 0 ? std::atof(to) : 120.0;
  NcclUniqueId id{};
  if (err = groupId(*nccl, first, timeoutS, id); !err)
    return nullptr;
  auto t = std::make_unique<TreeExecutor>();
  if (err = t->init(std::move(plan), local, ranks, first, id, nccl, timeoutS); !err)
    return nullptr;
  return t;
}

} // namespace genrt::cuda
