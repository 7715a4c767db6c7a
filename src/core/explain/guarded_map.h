#pragma once
// A read-only mapping of part of a file that survives the file being cut under it.
//
// Reading a large log through a mapping skips the copy out of the page cache (a sixth of
// explain's CPU on a cached log). But a page of a file truncated while mapped (copytruncate
// log rotation) is gone: touching it raises SIGBUS, which would kill explain. While any
// GuardedMap exists, a SIGBUS handler is installed: a fault inside a live GuardedMap puts a
// page of zeros where the file's page was and marks the map; the reader then asks how long
// the file is now and stops there. A fault anywhere else goes to the handler that was there
// before (the default one kills the process with SIGBUS as it would have).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace headroom {

class GuardedMap {
 public:
  /// Maps [offset, offset + length) of the open file `fd` (length > 0); `name` names errors.
  [[nodiscard]] static Result<GuardedMap> map(int fd, std::uint64_t offset, std::size_t length,
                                              const std::string& name);
  GuardedMap() = default;
  ~GuardedMap();
  GuardedMap(GuardedMap&& other) noexcept;
  GuardedMap& operator=(GuardedMap&& other) noexcept;
  GuardedMap(const GuardedMap&) = delete;
  GuardedMap& operator=(const GuardedMap&) = delete;

  /// The bytes asked for.
  [[nodiscard]] std::string_view bytes() const { return {data_, length_}; }
  /// Whether a page was gone when touched (the file was cut): it read as zeros.
  [[nodiscard]] bool lost_pages() const;

 private:
  void release();
  char* base_ = nullptr;    ///< the page-aligned mapping
  std::size_t mapped_ = 0;  ///< its length
  const char* data_ = nullptr;
  std::size_t length_ = 0;
  int slot_ = -1;  ///< its entry in the handler's table
};

}  // namespace headroom
