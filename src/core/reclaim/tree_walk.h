#pragma once
// Walking and removing a directory tree relative to directory fds only:
// every child is reached with openat(parent_fd, name, O_NOFOLLOW|O_DIRECTORY)
// and checked to be the inode fstatat saw, so replacing a directory by a
// symlink (to anywhere) while we work makes that openat fail instead of
// redirecting us. Entries on another device (a mount point) are never entered.

#include <sys/stat.h>

#include <cstdint>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/inuse/inuse_index.h"

namespace headroom {

/// What a walk found under one directory.
struct TreeSummary {
  std::uint64_t entries = 0;          ///< files, dirs, links below (not the root itself)
  std::uint64_t allocated_bytes = 0;  ///< st_blocks x 512, hard links counted each time
  std::time_t newest_mtime = 0;       ///< newest st_mtime, the root included
  std::vector<FileId> ids;            ///< every inode below, the root included
  bool crosses_mount = false;         ///< something below lives on another device
  std::string error;                  ///< first error (a directory that could not be read)
};

/// Summarizes the tree of the directory open at `dir_fd`, staying on `device`.
[[nodiscard]] TreeSummary summarize_tree(int dir_fd, std::uint64_t device);

/// Decides, for one entry about to be removed, a reason to keep it (nullopt: remove).
using KeepRule = std::function<std::optional<std::string>(const struct stat& info)>;

/// What remove_tree_contents did.
struct RemoveOutcome {
  std::uint64_t removed = 0;
  std::uint64_t freed_bytes = 0;
  std::vector<std::string> kept;  ///< "relative/path: reason"
};

/// Removes everything below the directory open at `dir_fd`, deepest first,
/// with unlinkat relative to each directory's fd; entries `keep` names a
/// reason for stay (and so do their ancestors, which are then not empty).
[[nodiscard]] RemoveOutcome remove_tree_contents(int dir_fd, std::uint64_t device,
                                                 const KeepRule& keep);

}  // namespace headroom
