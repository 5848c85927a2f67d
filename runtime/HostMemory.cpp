#include "runtime/HostMemory.h"

#include <fstream>
#include <unistd.h>

namespace genrt {
namespace {

// A cgroup limit file's number; "max" or an unreadable file: none.
int64_t cgroupLimit(const char *path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 18)
    return 0;
  return std::stoll(text);
}

std::string mib(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

} // namespace

int64_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  int64_t total = pages > 0 && page > 0 ? int64_t(pages) * page : 0;
  for (const char *f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
    if (int64_t limit = cgroupLimit(f); limit > 0 && (total == 0 || limit < total))
      total = limit;
  return total;
}

Status checkHostMemory(int64_t need, const std::string &what) {
  const int64_t have = hostMemoryBytes();
  if (need < 0)
    return Status::error(what + " overflow 64-bit arithmetic");
  if (have > 0 && need > have)
    return Status::error(what + " need " + std::to_string(need) + " bytes (" + mib(need) + "), more than the " +
                         std::to_string(have) + " bytes (" + mib(have) + ") of memory this machine has");
  return Status::ok();
}

} // namespace genrt
