#pragma once
// Feeding files and streams to a LogAnalyzer: plain or gzip (detected by the
// magic bytes, not the name), in large chunks, one pass.

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/signatures/analyzer.h"

namespace headroom {

/// Streams the file at `path` ("-" is not special here) into `analyzer` as one
/// source named `name` (evidence shows it; "" for a lone input). Returns the bytes fed
/// (decompressed).
[[nodiscard]] Result<std::uint64_t> feed_file(LogAnalyzer& analyzer,
                                              const std::filesystem::path& path,
                                              const std::string& name);
/// Streams an open descriptor (stdin) into `analyzer`; the source is named `name`.
[[nodiscard]] Result<std::uint64_t> feed_fd(LogAnalyzer& analyzer, int fd, const std::string& name);

}  // namespace headroom
