#pragma once
// The rule of core/inuse/use_proof.h applied to the entries of a tree (docs/safety.md), for
// `clean` and `prune` alike: a regular file is unused when the index shows no holder and the
// kernel grants a lease (or, without a lease answer, every process was inspected); a
// directory or FIFO when no holder is visible and no process that could not be inspected
// could use it.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/clean/tree_walk.h"
#include "core/inuse/use_proof.h"

namespace headroom {

/// Why `entry` may be in use (nullopt: proven unused). Sockets and symlinks: holders only.
/// Pids that could not be inspected and kept it are appended to `blocking` when given.
[[nodiscard]] std::optional<std::string> entry_in_use(const TreeEntry& entry,
                                                      const InUseIndex& index,
                                                      const Visibility& visibility, uid_t caller,
                                                      std::vector<int>* blocking = nullptr);

/// The first "relative/path: reason" anything at `name` in `dir_fd` (a file, or a directory
/// and everything in it) may be in use for; nullopt when all of it is proven unused.
[[nodiscard]] std::optional<std::string> first_use(int dir_fd, const std::string& name,
                                                   const walk::FileStat& stat,
                                                   const InUseIndex& index,
                                                   const Visibility& visibility, uid_t caller);

}  // namespace headroom
