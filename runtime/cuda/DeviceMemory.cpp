// The CUDA executor's allocations (DeviceMemory.h): planned, checked against
// the free memory, then taken at once; pinned host buffers beside them.
#include "runtime/cuda/DeviceMemory.h"

#include <cstdio>

namespace genrt::cuda {
namespace {

std::string human(int64_t b) {
  char buf[32];
  if (b >= (int64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(int64_t(1) << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1 << 20));
  return buf;
}

} // namespace

DeviceMemory::~DeviceMemory() {
  if (!dev_.api)
    return;
  for (Block &b : blocks_)
    if (b.ptr)
      dev_.api->cuMemFree(b.ptr);
  for (void *h : hostBlocks_)
    dev_.api->cuMemFreeHost(h);
}

void DeviceMemory::plan(const std::string &what, int64_t bytes) {
  int64_t rounded = (std::max<int64_t>(bytes, 1) + 255) / 256 * 256;
  blocks_.push_back({what, rounded});
  total_ += rounded;
}

Status DeviceMemory::allocate() {
  size_t freeB = 0, totalB = 0;
  if (Status s = dev_.check(dev_.api->cuMemGetInfo(&freeB, &totalB), "cuMemGetInfo"); !s)
    return s;
  if (total_ > static_cast<int64_t>(freeB))
    return Status::error("the plan needs " + std::to_string(total_) + " bytes (" + human(total_) +
                         ": " + report() + ") of GPU memory, " + dev_.name + " has " +
                         std::to_string(freeB) + " bytes (" + human(static_cast<int64_t>(freeB)) +
                         ") free; compile with smaller --max-batch / --max-length or --dtype f16");
  for (Block &b : blocks_)
    if (Status s = dev_.check(dev_.api->cuMemAlloc(&b.ptr, static_cast<size_t>(b.bytes)),
                              ("allocating " + b.what).c_str());
        !s)
      return s;
  return Status::ok();
}

CUdeviceptr DeviceMemory::at(const std::string &what) const {
  for (const Block &b : blocks_)
    if (b.what == what)
      return b.ptr;
  return 0;
}

int64_t DeviceMemory::bytes(const std::string &what) const {
  for (const Block &b : blocks_)
    if (b.what == what)
      return b.bytes;
  return 0;
}

std::string DeviceMemory::report() const {
  std::string r;
  for (const Block &b : blocks_)
    r += (r.empty() ? "" : ", ") + b.what + " " + human(b.bytes);
  return r;
}

Status DeviceMemory::pinned(int64_t bytes, void *&out) {
  if (Status s = dev_.check(dev_.api->cuMemAllocHost(&out, static_cast<size_t>(std::max<int64_t>(bytes, 16))),
                            "allocating pinned host memory");
      !s)
    return s;
  hostBlocks_.push_back(out);
  return Status::ok();
}

} // namespace genrt::cuda
