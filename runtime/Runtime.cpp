#include "runtime/Runtime.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace genrt {

// Placeholder until the plan loader and the CPU executor land: it checks
// what it can (device name, that the file opens) so genrun's error paths
// are real, then says plainly that loading is not there yet.
std::unique_ptr<Decoder> openDecoder(const std::string &planPath, const std::string &device, Status &err) {
  if (device != "cpu") {
    err = Status::error("unknown device '" + device + "' (this build supports: cpu)");
    return nullptr;
  }
  std::FILE *f = std::fopen(planPath.c_str(), "rb");
  if (!f) {
    err = Status::error("cannot open plan '" + planPath + "': " + std::strerror(errno));
    return nullptr;
  }
  std::fclose(f);
  err = Status::error("cannot load plan '" + planPath + "': plan loading is not implemented yet");
  return nullptr;
}

} // namespace genrt
