#pragma once
// Removing planned checkpoints without ever following a symlink or crossing
// into another mount: every step is openat/unlinkat relative to a directory fd
// opened O_NOFOLLOW|O_DIRECTORY, so a directory swapped for a symlink between
// plan and removal cannot redirect it. Right before each removal the entry's
// device and inode, its size and mtime, and "held by nobody" (a fresh /proc
// scan) are checked again; anything that changed is skipped and reported.

#include <cstdint>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/series/checkpoints.h"

namespace headroom {

/// What happened to one planned removal.
enum class RemovalStatus { kRemoved, kSkipped, kFailed };

/// The outcome of one planned removal.
struct RemovalOutcome {
  std::size_t index = 0;  ///< into CheckpointScan::checkpoints
  RemovalStatus status = RemovalStatus::kSkipped;
  std::string reason;             ///< why skipped or failed; empty when removed
  std::uint64_t freed_bytes = 0;  ///< disk bytes, when removed
};

/// Whether the holder re-check scans /proc (tests of the removal itself may turn it off).
enum class HolderRecheck { kScan, kSkip };

/// Removes scan.checkpoints[i] for each i in `indices`, re-checking each first with the
/// proof `clean` uses (docs/safety.md); `vouched`: unreadable pids the caller vouches for.
/// Fails only when scan.dir itself is gone or was replaced.
[[nodiscard]] Result<std::vector<RemovalOutcome>> remove_checkpoints(
    const Context& context, const CheckpointScan& scan, const std::vector<std::size_t>& indices,
    HolderRecheck recheck = HolderRecheck::kScan, const std::vector<int>& vouched = {});

/// Removes the directory `name` under `parent_fd` and everything in it, never
/// following symlinks and never entering a directory on another device than
/// `device`. `expected` is the directory's own identity.
[[nodiscard]] Result<void> remove_tree_at(int parent_fd, const std::string& name,
                                          const walk::FileId& expected, dev_t device);

}  // namespace headroom
