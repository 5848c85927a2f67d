// Tree attention (genrun --gpus N): one CUDA executor per GPU, each with
// the whole weights and the same activations, each holding one shard of
// the self-attention cache (runtime/kv/KvLayout.h), their attention outputs
// combined after every self-attention op through NCCL (AttentionSteps.cpp's
// TreeCombineStep). One process drives its local GPUs, a thread each. The
// tree executor wraps the GPUs' executors: it holds each as an Executor
// beside its NCCL channel (NcclChannel.h), and runs every call on all of
// them at once.
#pragma once
#include "runtime/Executor.h"
#include "runtime/cuda/CudaOptions.h"
#include "runtime/cuda/NcclChannel.h"

#include <memory>

namespace genrt::cuda {

/// A CUDA executor as one GPU of a group (runtime/cuda/CudaExecutor.cpp),
/// loaded on GPU channel.rank().ordinal with its shard of the caches but not
/// yet in the NCCL group: every GPU loads first (a failure there leaves no
/// GPU waiting in NCCL), then all join at once (NcclChannel::join). It uses
/// `channel`, which must outlive it, for its combine steps and waits, and
/// closes the communicator when it closes. Its run methods write results
/// only where given buffers (nullptr: the group's first GPU answers for all).
std::unique_ptr<Executor> makeCudaReplica(std::shared_ptr<const Plan> plan, const CudaOptions &options,
                                          NcclChannel &channel, Status &err);

/// The group over opts.gpus local GPUs. Across hosts, each process passes
/// GENC_NCCL_RANKS (GPUs in all), GENC_NCCL_FIRST_RANK (its first GPU's
/// rank) and GENC_NCCL_ID_FILE (a path all of them see: the process of
/// rank 0 writes the NCCL id there, the others wait for it); `options`
/// holds them.
std::unique_ptr<Executor> makeTreeExecutor(std::shared_ptr<const Plan> plan, const ExecutorOptions &opts,
                                           const CudaOptions &options, Status &err);

} // namespace genrt::cuda
