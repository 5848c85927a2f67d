// Status: how the runtime reports errors. No exceptions cross the runtime API.
#pragma once
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace genrt {

class Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string msg) { return Status(std::move(msg)); }
  bool isOk() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string &message() const { return msg_; }

private:
  Status() = default;
  explicit Status(std::string m) : failed_(true), msg_(std::move(m)) {}
  bool failed_ = false;
  std::string msg_;
};

/// The runtime's API edge: runs `body` (which returns a Status) and turns an
/// allocation failure inside it into an error naming `what` ("loading the
/// plan"), so that no exception crosses the API. std::length_error is a
/// size beyond what a container can hold, the same failure.
template <typename F> Status statusOnOutOfMemory(const std::string &what, F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
  } catch (const std::length_error &) {
  }
  return Status::error("out of memory " + what);
}

} // namespace genrt
