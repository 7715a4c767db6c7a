#pragma once
// Writing to headroom's own stdout or stderr without ever blocking the thread
// that serves signals and reads the job's output.
//
// The reader of headroom's output can stop reading: a pipe whose consumer hung,
// a FIFO nobody reads, a terminal stopped with Ctrl-S. A blocking write there
// used to hold the output path in write(2) forever, with SIGTERM from `docker
// stop` or Kubernetes left unread in the signalfd until SIGKILL. The fd cannot
// be made non-blocking: O_NONBLOCK is a flag of the open file description, shared
// with the shell and every other process writing to the same terminal or pipe.
//
// So the blocking writes happen on a thread of their own, from a bounded queue.
// While the queue is full and the reader still takes bytes, the caller stops
// reading the job (should_wait), which then waits on its pipe as it would without
// headroom: a slow reader loses nothing. Once a write has waited for the reader
// for the stall time, the job's output is read again and what does not fit the
// queue is dropped, counted and reported (SinkStats), never silently.
// The queue is a byte ring allocated up front but touched only as it fills, so
// memory grows only while a reader is behind.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"

namespace headroom {

/// How one output fared.
struct SinkStats {
  std::uint64_t written_bytes = 0;
  /// Not written: the queue was full while the reader was stalled, or the output
  /// was abandoned at the end (a reader that made no progress for the flush timeout).
  std::uint64_t dropped_bytes = 0;
  /// The longest time one write waited for the reader.
  std::chrono::milliseconds longest_stall{0};
  bool broken = false;     ///< the reader went away (EPIPE)
  bool abandoned = false;  ///< flush gave up on a stalled reader
  std::string error;       ///< a write error other than EPIPE, e.g. "No space left on device"
};

/// A queue and a thread writing it to one fd, which it does not own.
class SinkWriter {
 public:
  /// Default bound of the queue: 16 MiB (a stalled reader costs at most that much memory).
  static constexpr std::size_t kDefaultCapacity = std::size_t{16} << 20;

  explicit SinkWriter(int fd, std::size_t capacity = kDefaultCapacity);
  /// Does not wait for a write stuck in the kernel: that thread is left to the process exit.
  ~SinkWriter();
  SinkWriter(const SinkWriter&) = delete;
  SinkWriter& operator=(const SinkWriter&) = delete;

  /// Queues bytes; never blocks. Beyond the capacity, after EPIPE or once
  /// abandoned, the bytes are dropped and counted.
  void write(std::string_view bytes);
  /// Nothing queued and no write in progress: the caller may write to fd() itself.
  [[nodiscard]] bool idle() const;
  /// Whether the caller should hold back `bytes` for now: the queue lacks room for them
  /// while the reader is still taking bytes (no write has waited `stall` for it). The
  /// caller then stops reading the job, which waits on its pipe as it would without
  /// headroom; only a reader that stopped (or went away) has bytes dropped.
  [[nodiscard]] bool should_wait(std::size_t bytes, std::chrono::milliseconds stall) const;
  /// Blocks while should_wait(bytes, stall), at most until `limit` passes.
  void wait_for_room(std::size_t bytes, std::chrono::milliseconds stall,
                     std::chrono::milliseconds limit) const;
  /// The reader went away (EPIPE).
  [[nodiscard]] bool broken() const;
  /// Waits until everything queued is written; gives up when no byte was
  /// written for `stall` (or at once when `abandon` is true), counting the rest as dropped.
  /// Returns true when everything was written.
  bool flush(std::chrono::milliseconds stall, bool abandon = false);
  /// Total bytes written so far (progress, for a caller that waits on several writers).
  [[nodiscard]] std::uint64_t written() const;
  [[nodiscard]] SinkStats stats() const;
  [[nodiscard]] int fd() const { return fd_; }

  struct State;

 private:
  int fd_;
  std::shared_ptr<State> state_;
};

/// Writers for headroom's stdout and stderr; one shared writer when both are the
/// same file (`2>&1`, one terminal), so the order of their lines is kept.
struct OutputWriters {
  std::shared_ptr<SinkWriter> out;
  std::shared_ptr<SinkWriter> err;
};
/// An error when no thread can be started for them (a task limit: the job is not started).
[[nodiscard]] Result<OutputWriters> make_output_writers(int stdout_fd, int stderr_fd);

}  // namespace headroom
