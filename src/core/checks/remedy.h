#pragma once
// Remedy lines in the dialect of the detected runtime: the exact flag, manifest
// field or command that gives the job more of a resource.

#include <cstdint>
#include <string>
#include <vector>

#include "core/probes/runtime.h"

namespace headroom {

/// How to give /dev/shm at least `bytes`: docker --shm-size, a Kubernetes
/// emptyDir of medium Memory, or a tmpfs remount on a host.
[[nodiscard]] std::vector<std::string> shm_resize_remedies(const Runtime& runtime,
                                                           std::uint64_t bytes);

}  // namespace headroom
