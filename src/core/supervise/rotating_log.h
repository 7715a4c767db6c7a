#pragma once
// `headroom run --log FILE`: a copy of the job's output in a size-capped,
// rotated file (FILE, FILE.1, ... FILE.<keep-1>), written by its own thread.
// The job never waits for this disk: when the writer falls behind (a slow or
// hung filesystem) or a write fails (ENOSPC), the bytes are dropped and counted.
// Files are opened and rotated by the rules of core/safe_output.h (no symlink
// followed, relative to the directory opened at the start, created 0640).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"

namespace headroom {

/// Where and how much to keep.
struct RotatingLogOptions {
  std::filesystem::path path;
  std::uint64_t max_bytes = 64ull << 20;    ///< size of one file before it rotates
  unsigned keep = 3;                        ///< files kept, FILE included
  std::uint64_t queue_bytes = 16ull << 20;  ///< output held for the writer before dropping
};

/// What the writer did, for the report.
struct RotatingLogStats {
  std::uint64_t written_bytes = 0;
  std::uint64_t lost_bytes = 0;  ///< dropped: queue full or a failed write
  unsigned rotations = 0;
  std::string last_error;  ///< e.g. "/logs/job.log: No space left on device"
};

/// An asynchronous, rotating log file.
class RotatingLog {
 public:
  /// Opens (creates or appends to) the file and starts the writer thread. Refuses
  /// (kPermissionDenied) a symlink, a non-regular file, a hard link or another user's file.
  [[nodiscard]] static Result<std::unique_ptr<RotatingLog>> open(RotatingLogOptions options);
  ~RotatingLog();
  RotatingLog(const RotatingLog&) = delete;
  RotatingLog& operator=(const RotatingLog&) = delete;

  /// Queues bytes; never blocks on the disk (drops and counts when the queue is full).
  void write(std::string_view bytes);
  /// Flushes what is queued, waiting at most `timeout_ms`, and stops the writer.
  /// A writer stuck in the kernel is abandoned (its unwritten bytes count as lost).
  RotatingLogStats close(int timeout_ms = 2000);

  struct State;

 private:
  explicit RotatingLog(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

/// Name of the n-th rotated file: FILE for 0, FILE.n otherwise.
[[nodiscard]] std::filesystem::path rotated_name(const std::filesystem::path& path, unsigned n);

}  // namespace headroom
