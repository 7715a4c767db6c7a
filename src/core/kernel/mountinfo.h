#pragma once
// /proc/<pid>/mountinfo: the mounts the examined process sees.
// Format: Documentation/filesystems/proc.rst, "3.5 /proc/<pid>/mountinfo".
// Quirks: fields 7.. are optional tags ended by "-"; spaces, tabs, newlines and
// backslashes in paths are escaped as \040, \011, \012, \134.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// One line of mountinfo.
struct MountEntry {
  int mount_id = 0;
  int parent_id = 0;
  std::string device;       ///< "major:minor"
  std::string root;         ///< root of the mount within its filesystem
  std::string mount_point;  ///< as the process sees it, unescaped
  std::string mount_options;
  std::string fstype;
  std::string source;
  std::string super_options;

  [[nodiscard]] bool read_only() const;
  /// Mounted noexec: the loader cannot map code from files on it.
  [[nodiscard]] bool no_exec() const;
  /// Value of a "key=value" super option, e.g. option("size") -> "65536k".
  [[nodiscard]] std::optional<std::string> option(std::string_view key) const;
};

/// Parses mountinfo text; lines that do not parse are an Error naming the line.
[[nodiscard]] Result<std::vector<MountEntry>> parse_mountinfo(std::string_view text);
/// Reads /proc/<pid>/mountinfo of the context's process.
[[nodiscard]] Result<std::vector<MountEntry>> read_mountinfo(const Context& context);
/// The mount that holds `host_path` (the last mounted on the longest matching prefix).
[[nodiscard]] const MountEntry* find_mount(const std::vector<MountEntry>& mounts,
                                           const std::filesystem::path& host_path);
/// Whether looking `host_path` up, following no symlink, reads only filesystems that
/// answer from memory or a local disk (tmpfs, ext4, xfs, btrfs, ...), never a server or a
/// user-space daemon (NFS, CIFS, Lustre, FUSE, autofs, an overlay whose layers may be
/// anywhere): every mount on the path or one of its directories, hidden or not, is of such
/// a type. A lookup of such a path cannot hang on a dead server. False for a relative path
/// or one with a "..".
[[nodiscard]] bool lookup_stays_local(const std::vector<MountEntry>& mounts,
                                      const std::filesystem::path& host_path);
/// The devices (st_dev) every file whose name reads as one at or below `host_path` is
/// on: every mount on the way to it, hidden or not (a file opened before a later mount
/// hid its directory keeps its name), and every mount below it. nullopt unless each of
/// them is of a type whose files all carry the mount's own device in stat and in
/// /proc/<pid>/maps (tmpfs, ext4, xfs, ...): a btrfs subvolume or an overlay's file has
/// a device of its own, and so does an unknown type.
[[nodiscard]] std::optional<std::vector<std::uint64_t>> devices_below(
    const std::vector<MountEntry>& mounts, const std::filesystem::path& host_path);

}  // namespace headroom
