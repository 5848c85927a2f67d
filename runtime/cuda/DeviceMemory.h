// Device and pinned host allocations of the CUDA executor, freed with it, and
// the check that runs before any of them: a plan whose weights,
// caches, arena and workspaces exceed the GPU's free memory is refused with
// both numbers, before a byte is allocated.
#pragma once
#include "runtime/cuda/Device.h"

#include <string>
#include <vector>

namespace genrt::cuda {

class DeviceMemory {
public:
  explicit DeviceMemory(const Device &dev) : dev_(dev) {}
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  /// Records a planned device allocation (bytes rounded up to 256) under a
  /// name for the report; allocate() then takes them all at once.
  void plan(const std::string &what, int64_t bytes);
  /// Fails, naming the total and the free memory, when the plan does not fit.
  Status allocate();
  /// The address of the named allocation (after allocate()).
  CUdeviceptr at(const std::string &what) const;
  /// Its size as planned (rounded up to 256), 0 for none.
  int64_t bytes(const std::string &what) const;
  int64_t totalBytes() const { return total_; }
  /// "weights 2.1 GiB, kv cache 88 MiB, ..." in planning order.
  std::string report() const;

  /// Page-locked host memory (async copies, CUDA graph memcpy nodes).
  Status pinned(int64_t bytes, void *&out);

private:
  struct Block {
    std::string what;
    int64_t bytes;
    CUdeviceptr ptr = 0;
  };
  const Device &dev_;
  std::vector<Block> blocks_;
  std::vector<void *> hostBlocks_;
  int64_t total_ = 0;
};

} // namespace genrt::cuda
