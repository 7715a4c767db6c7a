#pragma once
// Where the kernel's pseudo-filesystems and the host's mounts live. Production
// uses "/"; tests point it at a recorded tree such as tests/fixtures/docker_64m_shm/.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"

namespace headroom {

/// How a pseudo-file ends.
enum class FileEnd {
  /// Where a read returns nothing: a file written record by record (a seq_file such as
  /// vmstat or mountinfo) can return less than asked before its end.
  kEmptyRead,
  /// Also where a read returns less than asked: the kernel writes the whole file in one piece
  /// (meminfo and PSI are single_open seq_files, a cgroup attribute is one show, a sysctl is
  /// one value), so a short read has it all. Spares the read that would confirm the end.
  kShortRead,
};

/// Maps absolute host paths under a root prefix. Every read of /proc, /sys,
/// /dev and the temp dirs goes through one of these.
class SysRoot {
 public:
  explicit SysRoot(std::filesystem::path root = "/");

  /// The root prefix itself ("/" in production).
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }
  /// True when the root is "/", i.e. paths are the live host's.
  [[nodiscard]] bool is_live() const;
  /// `relative` under <root>/proc, e.g. proc("self/mountinfo").
  [[nodiscard]] std::filesystem::path proc(std::string_view relative = "") const;
  /// `relative` under <root>/sys.
  [[nodiscard]] std::filesystem::path sys(std::string_view relative = "") const;
  /// `relative` under <root>/dev, e.g. dev("shm").
  [[nodiscard]] std::filesystem::path dev(std::string_view relative = "") const;
  /// Any absolute host path re-rooted, e.g. host("/var/tmp").
  [[nodiscard]] std::filesystem::path host(const std::filesystem::path& absolute) const;
  /// The inverse of host(): strips the root prefix for display ("/dev/shm").
  [[nodiscard]] std::filesystem::path display(const std::filesystem::path& rooted) const;

  /// Reads a whole pseudo-file: never trusts st_size, reads to EOF, at most `limit` bytes.
  [[nodiscard]] Result<std::string> read(const std::filesystem::path& path,
                                         std::size_t limit = std::size_t{1} << 20,
                                         FileEnd end = FileEnd::kEmptyRead) const;
  /// Resolves every symlink in an absolute host path as the host sees it (realpath under
  /// the root prefix: an absolute link target is re-rooted), for command-line operands
  /// (`du -H`, fuser). "." and ".." are applied after each link, as the kernel does.
  /// ENOENT for a missing component, ELOOP after 40 links.
  [[nodiscard]] Result<std::filesystem::path> resolve(const std::filesystem::path& absolute) const;
  /// Reads a symlink's target (e.g. /proc/<pid>/fd/3), without following it.
  [[nodiscard]] Result<std::string> read_link(const std::filesystem::path& path) const;

 private:
  std::filesystem::path root_;
};

}  // namespace headroom
