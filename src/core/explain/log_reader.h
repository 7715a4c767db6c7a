#pragma once
// Feeding files and streams to a LogAnalyzer: plain or gzip (detected by the
// magic bytes, not the name), in large chunks, one pass.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/signatures/analyzer.h"

namespace headroom {

/// How a large plain file is read: its chunks are read and scanned for literals on
/// `threads` threads at once and fed to the analyzer in order (feed_scanned), which gives
/// the same diagnosis as one pass.
struct ReadOptions {
  /// Scanning threads; 0: one per CPU this process may run on, at most kMaxThreads. With
  /// one, the file is read in one pass on the calling thread.
  unsigned threads = 0;
  /// Bytes a thread reads and scans at a time.
  std::size_t chunk = std::size_t{4} << 20;
  /// Whether those chunks are mapped rather than copied: a sixth less CPU on a cached log.
  /// A file that cannot be mapped is read. A log cut while mapped ends about where it was
  /// cut: a page cut while it is being fed reads as zeros (guarded_map.h), where a read
  /// ends exactly at the cut.
  bool map = true;
  /// A file at least this large is scanned in two stages (literal_scanner.h) once their
  /// first stage is compiled, on a thread of its own while the head is read: that takes
  /// ~20 ms of CPU and saves ~0.1 ms a MB.
  std::uint64_t two_stages = std::uint64_t{256} << 20;
  static constexpr unsigned kMaxThreads = 4;
};

/// Streams the file at `path` ("-" is not special here) into `analyzer` as one
/// source named `name` (evidence shows it; "" for a lone input). Returns the bytes fed
/// (decompressed).
[[nodiscard]] Result<std::uint64_t> feed_file(LogAnalyzer& analyzer,
                                              const std::filesystem::path& path,
                                              const std::string& name,
                                              const ReadOptions& options = {});
/// Streams an open descriptor (stdin) into `analyzer`; the source is named `name`.
[[nodiscard]] Result<std::uint64_t> feed_fd(LogAnalyzer& analyzer, int fd, const std::string& name);

}  // namespace headroom
