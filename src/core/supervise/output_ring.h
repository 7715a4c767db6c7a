#pragma once
// The last bytes of the job's output, kept for the post-mortem: the traceback
// that explains a death is at the end, and a job may print for days. Written by
// the output thread (under a mutex that is only ever contended for the moment
// in which the sampler thread copies the last line or two of a quiet job to look
// for an ENOSPC message), read at the end.
//
// Bytes taken from a pipe (append_from) are not copied: they are spliced, by page
// reference, into a chain of pipes the ring holds, newest last. When the chain is
// full its oldest pipe is emptied: dropped (spliced to /dev/null, still no copy)
// when the newer pipes alone hold the ring's capacity, else read into the memory
// ring. A fast writer's gigabytes are thus never copied; only what a reader asks
// for (contents, last) is read out of the chain, once. Without pipes of at least
// 256 KiB (pipe-user-pages-soft exhausted), every byte is read into memory.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/unique_fd.h"

namespace headroom {

/// A fixed-capacity byte ring: appending never allocates after construction.
/// append() may run concurrently with last(), contents() and total_bytes().
class OutputRing {
 public:
  explicit OutputRing(std::size_t capacity);

  /// Appends bytes; when full, the oldest bytes are overwritten.
  void append(std::string_view bytes);
  /// Appends up to `count` bytes taken from the pipe `fd` (spliced into the held chain, or
  /// read straight into memory); returns the bytes appended (fewer at EOF or on error).
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
  /// Bytes held in pipes, not yet in memory (for tests).
  [[nodiscard]] std::size_t held_bytes() const;

 private:
  struct HeldPipe {
    UniqueFd read;
    UniqueFd write;
    std::size_t bytes = 0;
  };
  // All with the lock held.
  [[nodiscard]] std::string copy_newest(std::size_t count) const;
  void advance(std::size_t count) const;
  std::size_t read_into_memory(int fd, std::size_t count) const;
  bool open_held();
  void rotate();
  void settle() const;  // reads the held chain into memory, oldest first

  mutable std::mutex mutex_;
  // Logically const readers (last, contents) move held bytes into memory: mutable.
  mutable std::vector<char> buffer_;
  mutable std::size_t start_ = 0;  ///< index of the oldest byte in memory
  mutable std::size_t size_ = 0;
  std::atomic<std::uint64_t> total_{0};
  // The held chain: pipes first_ .. first_ + used_ - 1 (mod size), oldest first; every
  // held byte is newer than every byte in memory.
  mutable std::vector<HeldPipe> held_;
  mutable std::size_t first_ = 0;
  mutable std::size_t used_ = 0;
  mutable std::size_t held_bytes_ = 0;
  UniqueFd null_;
  bool held_failed_ = false;
};

}  // namespace headroom
