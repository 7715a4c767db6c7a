#pragma once
// Walking and removing a directory tree relative to directory fds only:
// every entry is statx'ed relative to its directory (never following a symlink), every
// child directory is reached with openat(parent_fd, name, O_NOFOLLOW|O_DIRECTORY) and
// checked to be the inode the statx saw, so replacing a directory by a symlink (to
// anywhere) while we work makes that openat fail instead of redirecting us. Mount points
// (another device, or STATX_ATTR_MOUNT_ROOT: a bind mount of the same file system) are
// never entered.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/walk/file_stat.h"

namespace headroom {

/// One entry met by a walk.
struct TreeEntry {
  int dir_fd = -1;              ///< the directory holding it
  const std::string& name;      ///< its name there
  const std::string& relative;  ///< its path below the walked root ("a/b/c")
  const walk::FileStat& stat;
};

/// A reason to keep an entry (and so its ancestors), or nullopt.
using EntryRule = std::function<std::optional<std::string>(const TreeEntry& entry)>;

/// Newest sign of use of one entry, ns since the epoch: mtime, ctime (a tar -x restores
/// old mtimes; ctime is when it was written) and, for what is not a directory, atime
/// (listing a directory, as this walk does, updates its atime).
[[nodiscard]] std::int64_t last_activity_ns(const walk::FileStat& stat);

/// What a walk found under one directory.
struct TreeSummary {
  std::uint64_t entries = 0;            ///< files, dirs, links below (not the root itself)
  std::uint64_t allocated_bytes = 0;    ///< disk bytes, the root included, hard links each time
  std::int64_t newest_activity_ns = 0;  ///< last_activity_ns of the newest entry, the root too
  std::optional<std::string> kept;      ///< the first "relative/path: reason" to keep something
  std::optional<Error> error;           ///< the first directory that could not be read, and why
};

/// Walks the directory open at `dir_fd` (whose statx is `root`), applying `rule` to every
/// entry below it; mount points are kept ("a mount point").
[[nodiscard]] TreeSummary summarize_tree(int dir_fd, const walk::FileStat& root,
                                         const EntryRule& rule);

/// What remove_tree_contents did.
struct RemoveOutcome {
  std::uint64_t removed = 0;
  std::uint64_t freed_bytes = 0;
  std::vector<std::string> kept;  ///< "relative/path: reason"
};

/// Removes everything below the directory open at `dir_fd`, deepest first, with unlinkat
/// relative to each directory's fd; entries `rule` names a reason for stay (and so do their
/// ancestors, which are then not empty).
[[nodiscard]] RemoveOutcome remove_tree_contents(int dir_fd, const walk::FileStat& root,
                                                 const EntryRule& rule);

}  // namespace headroom
