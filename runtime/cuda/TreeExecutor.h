// Tree attention (genrun --gpus N): one CUDA executor per GPU, each with
// the whole weights and the same activations, each holding one shard of
// the self-attention cache (runtime/KvLayout.h), their attention outputs
// combined after every self-attention op through NCCL (CudaSteps.h's
// TreeCombineStep). One process drives its local GPUs, a thread each.
#pragma once
#include "runtime/Executor.h"
#include "runtime/cuda/Nccl.h"

#include <memory>

namespace genrt::cuda {

/// One GPU of a group: GPU `ordinal` of this machine is shard `rank` of
/// `ranks`, joining the NCCL group `id`.
struct TreeRank {
  int ordinal = 0, rank = 0, ranks = 1;
  NcclUniqueId id{};
  const NcclApi *nccl = nullptr;
  double timeoutS = 120; // GENC_NCCL_TIMEOUT_S: a collective's wait before the group is aborted
};

/// A CUDA executor as one GPU of a group (runtime/cuda/CudaExecutor.cpp),
/// loaded but not yet in the NCCL group: every GPU loads first (a failure
/// there leaves no GPU waiting in NCCL), then all join at once. Its run
/// methods write results only where given buffers (nullptr: the group's
/// first GPU answers for all).
class TreeReplica : public Executor {
public:
  virtual Status joinGroup() = 0;
};
std::unique_ptr<TreeReplica> makeCudaReplica(std::shared_ptr<const Plan> plan, const TreeRank &rank, Status &err);

/// The group over opts.gpus local GPUs. Across hosts, each process passes
/// GENC_NCCL_RANKS (GPUs in all), GENC_NCCL_FIRST_RANK (its first GPU's
/// rank) and GENC_NCCL_ID_FILE (a path all of them see: the process of
/// rank 0 writes the NCCL id there, the others wait for it).
std::unique_ptr<Executor> makeTreeExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                           Status &err);

} // namespace genrt::cuda
