// Status: how the runtime reports errors. No exceptions cross the runtime API.
#pragma once
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

} // namespace genrt
