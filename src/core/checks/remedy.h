#pragma once
// Remedy lines in the dialect of the detected runtime: the exact flag, manifest
// field or command that gives the job more of a resource.

#include <cstdint>
#include <string>
#include <vector>

#include "core/finding.h"
#include "core/probes/mountinfo.h"
#include "core/probes/runtime.h"
#include "core/syscalls.h"

namespace headroom {

/// How to give /dev/shm at least `bytes`: docker --shm-size, a Kubernetes
/// emptyDir of medium Memory, or a tmpfs remount on a host.
[[nodiscard]] std::vector<std::string> shm_resize_remedies(const Runtime& runtime,
                                                           std::uint64_t bytes);

/// Adds the capacity of a filesystem as evidence (avail_bytes, total_bytes,
/// used_percent, free_inodes, inodes_used_percent, read_only) and, when known,
/// the mount holding it (mount_point, fstype).
void add_filesystem_evidence(Finding& finding, const FsStats& stats, const MountEntry* mount);

}  // namespace headroom
