#pragma once
// /proc/<pid>/maps: one line per mapping,
//   "start-end perms offset major:minor inode [pathname]"
// Doc: proc(5), Documentation/filesystems/proc.rst "The /proc/PID/maps file".
// Quirks: the device is hex major:minor (e.g. "fd:01", "00:1a" for tmpfs);
// addresses and offset are hex; inode is decimal; the pathname is padded by
// spaces, may contain spaces itself, ends in " (deleted)" when the file was
// unlinked, and is a pseudo-name such as "[heap]" for anonymous memory. A
// SysV segment appears as "/SYSV<key in hex> (deleted)" with inode = shmid.

#include <cstdint>
#include <optional>
#include <string_view>

namespace headroom {

/// One parsed maps line; the pathname is a view into the parsed text.
struct MapsLine {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  std::uint64_t inode = 0;
  bool shared = false;  ///< perms[3] == 's'
  std::string_view path;
};

/// Parses one line (without its newline); nullopt when it is malformed.
[[nodiscard]] std::optional<MapsLine> parse_maps_line(std::string_view line);

/// makedev(major, minor) as stat(2) reports st_dev.
[[nodiscard]] std::uint64_t make_device(std::uint32_t major, std::uint32_t minor);

}  // namespace headroom
