#pragma once
// /proc/sys/fs/file-nr: file handles allocated system-wide, and the ceiling.
// Source: Documentation/admin-guide/sysctl/fs.rst, "file-max & file-nr".
// Quirks: three tab-separated numbers "allocated unused max"; since Linux 2.6
// "unused" is always 0 (freed handles are returned at once); "max" is the same
// value as /proc/sys/fs/file-max, which on 64-bit kernels since 5.x defaults
// to LONG_MAX (9223372036854775807), i.e. practically no limit.

#include <cstdint>
#include <string_view>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The three numbers of file-nr.
struct FileNr {
  std::uint64_t allocated = 0;
  std::uint64_t unused = 0;
  std::uint64_t max = 0;  ///< fs.file-max

  /// allocated / max in percent (0 when max is 0).
  [[nodiscard]] double used_percent() const;
};

/// Parses "1856\t0\t9223372036854775807\n".
[[nodiscard]] Result<FileNr> parse_file_nr(std::string_view text);
/// Reads /proc/sys/fs/file-nr under the context's root.
[[nodiscard]] Result<FileNr> read_file_nr(const Context& context);

}  // namespace headroom
