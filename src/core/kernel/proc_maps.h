#pragma once
// /proc/<pid>/maps: one line per mapping,
//   "start-end perms offset major:minor inode [pathname]"
// Doc: proc(5), Documentation/filesystems/proc.rst "The /proc/PID/maps file".
// Quirks: the device is hex major:minor (e.g. "fd:01", "00:1a" for tmpfs);
// addresses and offset are hex; inode is decimal; the pathname is padded by
// spaces, may contain spaces itself, ends in " (deleted)" when the file was
// unlinked, and is a pseudo-name such as "[heap]" for anonymous memory. A
// SysV segment appears as "/SYSV<key in hex> (deleted)" with inode = shmid.
//
// The PROCMAP_QUERY ioctl on an open maps file (Linux 6.11+, linux/fs.h) asks
// for one mapping at a time and reports the same columns (the device and
// inode of file_user_inode(vm_file), as the text shows them) without
// formatting any line or resolving any path: a caller that filters by device
// asks for the name of a matching mapping only. Older kernels answer ENOTTY.

#include <cstdint>
#include <optional>
#include <string>
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

/// The first file-backed mapping that covers or follows `address` in the open
/// /proc/<pid>/maps `maps_fd`, as its maps line would read but without the path
/// (`path` is left empty). Returns 0; ENOENT past the last one (ESRCH: the
/// process has no memory, a kernel thread or one that exited); ENOTTY or EINVAL
/// when the kernel has no PROCMAP_QUERY; another errno on failure.
[[nodiscard]] int query_file_mapping(int maps_fd, std::uint64_t address, MapsLine& mapping);

/// The pathname column of the file-backed mapping that starts at `start`, as the
/// text shows it (a newline escaped as "\012", " (deleted)" appended); an errno on failure.
[[nodiscard]] int query_mapping_name(int maps_fd, std::uint64_t start, std::string& name);

/// makedev(major, minor) as stat(2) reports st_dev.
[[nodiscard]] std::uint64_t make_device(std::uint32_t major, std::uint32_t minor);

}  // namespace headroom
