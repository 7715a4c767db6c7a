#pragma once
// Internal to the memory checks (memory.cc, memory_cgroup.cc): the two findings
// check_memory yields and the formula they share.

#include <cstdint>

#include "core/checks/check.h"

namespace headroom {

/// Resident memory of the job: ranks x (workers + 1) x worker_rss (each rank's
/// main process plus its DataLoader workers); 0 without --worker-rss.
[[nodiscard]] std::uint64_t job_memory_need(const CheckOptions& options);

/// memory.available: MemAvailable, swap and PSI against the job's need.
[[nodiscard]] Finding check_memory_available(const CheckInput& input);
/// memory.cgroup: the memory cgroup's limit, usage and OOM kills against the job's need.
[[nodiscard]] Finding check_memory_cgroup(const CheckInput& input);

}  // namespace headroom
