// Errors inside the CPU kernels. Same shape as llvm::Error / llvm::Expected
// (true means failure; Expected converts to true on success) so kernel code
// reads like the rest of the project, without LLVM in the runtime.
#pragma once
#include <optional>
#include <string>
#include <utility>

namespace genrt::cpu {

class [[nodiscard]] Error {
public:
  Error() = default;
  static Error success() { return Error(); }
  static Error make(std::string msg) {
    Error e;
    e.failed_ = true;
    e.msg_ = std::move(msg);
    return e;
  }
  explicit operator bool() const { return failed_; }
  const std::string &message() const { return msg_; }

private:
  bool failed_ = false;
  std::string msg_;
};

template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T v) : value_(std::move(v)) {} // NOLINT: implicit like llvm::Expected
  Expected(Error e) : error_(std::move(e)) {} // NOLINT
  explicit operator bool() const { return !error_; }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }
  Error takeError() { return std::move(error_); }

private:
  std::optional<T> value_;
  Error error_;
};

} // namespace genrt::cpu
