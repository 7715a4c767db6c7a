#pragma once
// The per-user inotify limits. Source: /proc/sys/fs/inotify/max_user_watches
// and max_user_instances (inotify(7), "/proc interfaces").
// Quirks: both count per real uid across the host (per user namespace since
// 5.11), not per process; a watcher over a dataset directory tree takes one
// watch per directory; defaults are 8192 watches on kernels before 5.11 (newer
// kernels scale it with RAM, up to 1048576) and 128 instances.

#include <cstdint>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// fs.inotify.max_user_watches and fs.inotify.max_user_instances.
struct InotifyLimits {
  std::uint64_t max_user_watches = 0;
  std::uint64_t max_user_instances = 0;
};

/// Reads both files; an Error names the one that could not be read.
[[nodiscard]] Result<InotifyLimits> read_inotify_limits(const Context& context);

}  // namespace headroom
