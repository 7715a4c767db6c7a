#pragma once
// The last bytes of the job's output, kept in memory for the post-mortem: the
// traceback that explains a death is at the end, and a job may print for days.
// Written by the output thread (one memcpy per chunk, under a mutex that is
// only ever contended for the microsecond in which the sampler thread copies
// the last line or two to look for an ENOSPC message), read at the end.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// A fixed-capacity byte ring: appending never allocates after construction.
/// append() may run concurrently with last(), contents() and total_bytes().
class OutputRing {
 public:
  explicit OutputRing(std::size_t capacity);

  /// Appends bytes; when full, the oldest bytes are overwritten.
  void append(std::string_view bytes);
  /// Appends up to `count` bytes read from `fd` straight into the ring (no
  /// intermediate buffer); returns the bytes appended (fewer at EOF or on error).
  std::size_t append_from(int fd, std::size_t count);
  /// The kept bytes, oldest first.
  [[nodiscard]] std::string contents() const;
  /// The newest `count` kept bytes (fewer when fewer are kept), oldest first.
  [[nodiscard]] std::string last(std::size_t count) const;
  /// Ends an open line (the newest kept byte is not '\n') with a '\n' that
  /// total_bytes() does not count: stdout and stderr share the ring.
  void end_open_line();
  /// Bytes appended over the whole life of the ring.
  [[nodiscard]] std::uint64_t total_bytes() const { return total_.load(std::memory_order_acquire); }
  /// True when older output was dropped.
  [[nodiscard]] bool truncated() const { return total_bytes() > buffer_.size(); }

 private:
  [[nodiscard]] std::string copy_newest(std::size_t count) const;  // lock held
  void advance(std::size_t count);                                 // lock held

  mutable std::mutex mutex_;
  std::vector<char> buffer_;
  std::size_t start_ = 0;  ///< index of the oldest byte
  std::size_t size_ = 0;
  std::atomic<std::uint64_t> total_{0};
};

}  // namespace headroom
