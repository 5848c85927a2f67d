// One GPU's NCCL channel of a tree-attention group (NcclChannel.h): joining
// the group, the stream wait that gives up, the communicator's end.
#include "runtime/cuda/NcclChannel.h"

#include <chrono>
#include <thread>

namespace genrt::cuda {

void NcclChannel::bind(const Device &dev, CUstream stream, CUdeviceptr probeIn, CUdeviceptr probeOut) {
  dev_ = &dev;
  stream_ = stream;
  probeIn_ = probeIn;
  probeOut_ = probeOut;
}

Status NcclChannel::join() {
  if (!dev_)
    return Status::error("joinGroup: this GPU's executor has not loaded");
  const NcclApi &n = api();
  ncclComm_t comm = nullptr;
  if (Status s = n.check(n.commInitRank(&comm, rank_.ranks, rank_.id, rank_.rank), "ncclCommInitRank"); !s)
    return s;
  comm_ = comm;
  // NCCL connects its peers at a communicator's first collective, which
  // cannot happen inside a stream capture (the first decode step's graph
  // would fail with "internal error" where no prefill ran a collective
  // before it): one small all-reduce now, outside any capture.
  if (Status s = n.check(n.allReduce(reinterpret_cast<void *>(probeIn_), reinterpret_cast<void *>(probeOut_), 1,
                                     kNcclFloat32, kNcclMax, comm_, stream_),
                         "ncclAllReduce (connecting the GPUs)");
      !s)
    return s;
  return wait("connecting the GPUs");
}

// A GPU of a group runs only while its communicator stands (an abort frees
// it; the captured graphs still name it).
Status NcclChannel::intact() const {
  return !comm_ ? Status::error("this GPU's tree-attention group was aborted (or never joined)") : Status::ok();
}

// A collective waits on the other GPUs: poll, and give up (aborting the
// communicator, which ends its kernels) after GENC_NCCL_TIMEOUT_S seconds
// or an NCCL error.
Status NcclChannel::wait(const std::string &what) {
  if (Status s = intact(); !s)
    return s;
  const DriverApi &a = *dev_->api;
  const NcclApi &n = api();
  const auto start = std::chrono::steady_clock::now();
  for (int spin = 0;; ++spin) {
    const CUresult r = a.cuStreamQuery(stream_);
    if (r == CUDA_SUCCESS)
      return Status::ok();
    if (r != CUDA_ERROR_NOT_READY)
      return dev_->check(r, what.c_str());
    int async = kNcclSuccess;
    n.commGetAsyncError(comm_, &async);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if ((async != kNcclSuccess && async != kNcclInProgress) || waited > rank_.timeoutS) {
      Status why = async != kNcclSuccess && async != kNcclInProgress
                       ? n.check(async, "a collective")
                       : Status::error("NCCL: GPU " + std::to_string(rank_.rank) + " had no answer from the other " +
                                       std::to_string(rank_.ranks - 1) + " in " + std::to_string(int(rank_.timeoutS)) +
                                       " s (GENC_NCCL_TIMEOUT_S); communicator aborted");
      n.commAbort(comm_);
      comm_ = nullptr;
      return Status::error(why.message() + " while " + what);
    }
    if (spin > 2000)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      std::this_thread::yield();
  }
}

void NcclChannel::close() {
  if (comm_)
    api().commDestroy(comm_);
  comm_ = nullptr;
}

} // namespace genrt::cuda
