// How much memory this machine (or this process's cgroup) has, and the
// check every executor makes before it allocates: a plan that needs more is
// refused with both numbers, instead of being killed for memory halfway.
#pragma once
#include "runtime/Status.h"

#include <cstdint>
#include <string>

namespace genrt {

/// Physical memory, lowered to the cgroup's memory limit where one is set
/// (containers); 0 when it cannot be read.
int64_t hostMemoryBytes();

/// Ok when `need` bytes fit in hostMemoryBytes(); else an error naming
/// `what` (e.g. "the CPU executor's weights, caches and arena") and both
/// sizes.
Status checkHostMemory(int64_t need, const std::string &what);

} // namespace genrt
