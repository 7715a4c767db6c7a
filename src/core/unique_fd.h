#pragma once
// An owned file descriptor, closed on scope exit. The core works relative to
// directory fds (openat, fstatat, unlinkat) so that a path swapped for a
// symlink cannot redirect it; this keeps every early return from leaking one.

#include <unistd.h>

#include <utility>

namespace headroom {

/// Owns one fd (or none, -1); movable, not copyable.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// The fd, still owned; -1 when none.
  [[nodiscard]] int get() const { return fd_; }
  /// Whether an fd is held (the open succeeded).
  [[nodiscard]] bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace headroom
