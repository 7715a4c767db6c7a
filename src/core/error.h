#pragma once
// Error values of the core. Expected failures (a pid that vanished, a cgroup
// file missing on one kernel) are returned as values, never thrown.

#include <string>
#include <tl/expected.hpp>
#include <utility>

namespace headroom {

/// Why an operation failed. Callers branch on `code`; `message` is for humans
/// and already names the path, e.g. "/proc/meminfo:3: missing ':'".
struct Error {
  enum class Code { kNotFound, kPermissionDenied, kIo, kParse, kInvalidArgument, kUnsupported };
  Code code = Code::kIo;
  std::string message;

  /// Maps an errno to a Code and formats "<path>: <strerror>".
  static Error from_errno(int errnum, const std::string& path);
  static Error parse(std::string message) { return {Code::kParse, std::move(message)}; }
  static Error invalid(std::string message) { return {Code::kInvalidArgument, std::move(message)}; }
};

/// A part a result could not include, and why: a probe that failed while the rest
/// worked. Callers filter by `error.code` (kPermissionDenied is a blind spot; kNotFound,
/// a pid that just exited, is not), never by the message's words.
struct PartialFailure {
  std::string what;  ///< what could not be read: "pid 4242 fds", "probe pressure"
  Error error;       ///< its message names the path: "/proc/4242/fd: Permission denied"

  [[nodiscard]] bool operator==(const PartialFailure& other) const {
    return error.code == other.error.code && error.message == other.error.message;
  }
};

/// An alias so that moving to C++23 std::expected is a one-line change.
template <typename T>
using Result = tl::expected<T, Error>;

/// Shorthand for returning an error from a function that returns Result<T>.
inline tl::unexpected<Error> fail(Error error) { return tl::unexpected<Error>(std::move(error)); }

}  // namespace headroom
