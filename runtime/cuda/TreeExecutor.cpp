// The tree executor (TreeExecutor.h): a thread a GPU, every call run on all
// of them at once under one deadline, and the NCCL group's id made or read.
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
    bool pending = false, done = false, quit = false;
    Status result = Status::ok();
  };

public:
  Worker() : state_(std::make_shared<State>()) {
    thread_ = std::thread([s = state_] {
      std::unique_lock<std::mutex> lock(s->m);
      for (;;) {
        s->cv.wait(lock, [&] { return s->pending || s->quit; });
        if (s->quit)
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
      state_->quit = true;
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

// One GPU of the group: its NCCL channel and the executor that uses it
// (destroyed first: it closes the channel's communicator).
struct Replica {
  std::unique_ptr<NcclChannel> channel;
  std::unique_ptr<Executor> executor;
};

class TreeExecutor final : public Executor {
public:
  ~TreeExecutor() override {
    // Each executor is closed on its own thread (its context is current there).
    if (!hung_) {
      for (size_t i = 0; i < workers_.size(); ++i)
        workers_[i]->post([this, i] {
          replicas_[i].executor.reset();
          return Status::ok();
        });
      const auto deadline = std::chrono::steady_clock::now() + seconds(timeoutS_ + 60);
      for (size_t i = 0; i < workers_.size(); ++i)
        hung_ |= !workers_[i]->wait(remaining(deadline));
    }
    if (hung_) // a GPU's thread never came back: what it may still touch is left to the process's exit
      new std::pair<decltype(workers_), decltype(replicas_)>(std::move(workers_), std::move(replicas_));
  }

  Status init(std::shared_ptr<const Plan> plan, const CudaOptions &options, int local, int ranks, int first,
              const NcclUniqueId &id, const NcclApi *nccl) {
    const double timeoutS = options.ncclTimeoutS;
    timeoutS_ = timeoutS;
    nccl_ = nccl;
    ranks_ = ranks;
    replicas_.resize(local);
    for (int i = 0; i < local; ++i) {
      workers_.push_back(std::make_unique<Worker>());
      replicas_[i].channel = std::make_unique<NcclChannel>(TreeRank{i, first + i, ranks, id, nccl, timeoutS});
    }
    // Every GPU loads (the weights, the memory, the programs), then all join
    // the NCCL group at once (its set-up waits for every rank): a GPU that
    // fails to load leaves none waiting in NCCL.
    if (Status s = all(
            [&, plan](int i) {
              Status st = Status::ok();
              replicas_[i].executor = makeCudaReplica(plan, options, *replicas_[i].channel, st);
              return st;
            },
            std::max(600.0, timeoutS));
        !s)
      return s;
    return all([&](int i) { return replicas_[i].channel->join(); }, timeoutS);
  }

  std::string deviceName() const override {
    std::string first = replicas_[0].executor->deviceName();
    if (first.rfind("cuda: ", 0) == 0) // "cuda: NAME (...)": the GPU's own part
      first.erase(0, 6);
    return "cuda x" + std::to_string(ranks_) + " (tree attention, NCCL " + std::to_string(nccl_->version) +
           "; GPU 0 " + first + ")";
  }
  int64_t memoryBytes() const override {
    int64_t n = 0;
    for (const Replica &r : replicas_)
      n += r.executor->memoryBytes();
    return n;
  }
  std::string memoryReport() const override {
    return "per GPU " + replicas_[0].executor->memoryReport() + " x " + std::to_string(replicas_.size());
  }

  bool chooses(const ChoiceRequest &req, ProgramKind kind) const override {
    return replicas_[0].executor->chooses(req, kind);
  }
  Status run(const ProgramRun &run, const ChoiceRequest &req, ChoiceAnswer *answer) override {
    return all([&](int i) { return replicas_[i].executor->run(run, req, i == 0 ? answer : nullptr); });
  }
  Status encode(const ProgramRun &run) override {
    return all([&](int i) { return replicas_[i].executor->encode(run); });
  }
  Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                   const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) override {
    return all([&](int i) { return replicas_[i].executor->copySlots(dst, src, lengths, from); });
  }

private:
  static std::chrono::steady_clock::duration seconds(double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
  }
  static double remaining(std::chrono::steady_clock::time_point deadline) {
    return std::max(0.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
  }

  // `task(i)` on every GPU's thread at once, one deadline for all (a
  // replica's own collectives time out and abort themselves; this is the
  // backstop for a call that never returns). An error names its GPU, a
  // GPU's own failure before another's NCCL timeout it caused; after any
  // error the GPUs may disagree (one appended K/V, another did not), so the
  // group takes no further run.
  Status all(const std::function<Status(int)> &task, double limit = 0) {
    if (broken_)
      return Status::error("tree attention: the GPU group failed earlier and takes no more runs");
    for (size_t i = 0; i < workers_.size(); ++i)
      workers_[i]->post([&task, i] { return task(static_cast<int>(i)); });
    const auto deadline = std::chrono::steady_clock::now() + TreeExecutor::seconds(limit > 0 ? limit : timeoutS_ + 60);
    Status own = Status::ok(), nccl = Status::ok();
    for (size_t i = 0; i < workers_.size(); ++i) {
      Status s = workers_[i]->wait(remaining(deadline));
      if (s)
        continue;
      hung_ |= s.message().rfind("no answer", 0) == 0;
      const bool waited = hung_ || s.message().find("NCCL") != std::string::npos ||
                          s.message().find("aborted") != std::string::npos;
      Status &slot = waited ? nccl : own;
      if (slot)
        slot = Status::error("GPU " + std::to_string(i) + ": " + s.message());
    }
    broken_ = !own || !nccl;
    return !own ? own : nccl;
  }

  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Replica> replicas_;
  const NcclApi *nccl_ = nullptr;
  int ranks_ = 1;
  double timeoutS_ = 120;
  bool broken_ = false, hung_ = false;
};

// The group's NCCL id: made here (rank 0, and written to the id file when
// there is one), or read from the file rank 0's process wrote.
Status groupId(const NcclApi &nccl, int first, double timeoutS, const std::string &file, NcclUniqueId &id) {
  if (first == 0) {
    if (Status s = nccl.check(nccl.getUniqueId(&id), "ncclGetUniqueId"); !s)
      return s;
    if (!file.empty()) {
      const std::string tmp = file + ".tmp" + std::to_string(getpid());
      std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
      if (std::rename(tmp.c_str(), file.c_str()) != 0)
        return Status::error(std::string("GENC_NCCL_ID_FILE: cannot write ") + file);
    }
    return Status::ok();
  }
  if (file.empty())
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
                                           const CudaOptions &options, Status &err) {
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
  const NcclApi *nccl = cuda::nccl(options.ncclLibrary, err);
  if (!nccl)
    return nullptr;
  const int ranks = options.ncclRanks ? *options.ncclRanks : local, first = options.ncclFirstRank;
  if (ranks < local || first < 0 || first + local > ranks) {
    err = Status::error("GENC_NCCL_RANKS " + std::to_string(ranks) + " / GENC_NCCL_FIRST_RANK " +
                        std::to_string(first) + " do not hold this process's " + std::to_string(local) + " GPUs");
    return nullptr;
  }
  const double timeoutS = options.ncclTimeoutS;
  NcclUniqueId id{};
  if (err = groupId(*nccl, first, timeoutS, options.ncclIdFile, id); !err)
    return nullptr;
  auto t = std::make_unique<TreeExecutor>();
  if (err = t->init(std::move(plan), options, local, ranks, first, id, nccl); !err)
    return nullptr;
  // Every rank has joined: the id file has served (a stale one would send
  // the next launch's ranks to a group that is gone).
  if (!options.ncclIdFile.empty() && first == 0)
    std::remove(options.ncclIdFile.c_str());
  return t;
}

} // namespace genrt::cuda
