// One GPU's link to the others of a tree-attention group (TreeExecutor.h):
// where it stands in the group, its NCCL communicator once joined, and the
// wait for its stream that gives up (aborting the communicator) when the
// other GPUs do not answer. The tree executor makes one a GPU and hands it
// to that GPU's CUDA executor, which binds its stream to it, reads the
// communicator in the combine steps and closes it when it closes.
#pragma once
#include "runtime/cuda/Device.h"
#include "runtime/cuda/Nccl.h"

#include <string>

namespace genrt::cuda {

/// One GPU of a group: GPU `ordinal` of this machine is shard `rank` of
/// `ranks`, joining the NCCL group `id`.
struct TreeRank {
  int ordinal = 0, rank = 0, ranks = 1;
  NcclUniqueId id{};
  const NcclApi *nccl = nullptr;
  double timeoutS = 120; // GENC_NCCL_TIMEOUT_S: a collective's wait before the group is aborted
};

class NcclChannel {
public:
  explicit NcclChannel(const TreeRank &rank) : rank_(rank) {}
  ~NcclChannel() { close(); }
  NcclChannel(const NcclChannel &) = delete;
  NcclChannel &operator=(const NcclChannel &) = delete;

  const TreeRank &rank() const { return rank_; }
  const NcclApi &api() const { return *rank_.nccl; }
  /// The communicator; null before join() and after an abort or close().
  ncclComm_t comm() const { return comm_; }

  /// The executor's stream, and two f32 device words the connecting
  /// all-reduce reads and writes (called when the executor has loaded).
  void bind(const Device &dev, CUstream stream, CUdeviceptr probeIn, CUdeviceptr probeOut);
  /// Joins the group (every GPU at once: NCCL waits for all of them) and
  /// connects the peers with one small all-reduce on the bound stream.
  Status join();
  /// An error once the communicator was aborted (or never joined).
  Status intact() const;
  /// The bound stream's work done, polling; after the timeout, or on an
  /// NCCL error, the communicator is aborted and the error says so.
  Status wait(const std::string &what);
  /// Destroys the communicator (before the executor's stream and context go).
  void close();

private:
  TreeRank rank_;
  ncclComm_t comm_ = nullptr;
  const Device *dev_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr probeIn_ = 0, probeOut_ = 0;
};

} // namespace genrt::cuda
