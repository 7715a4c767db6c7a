#pragma once
// Internal to the memory checks (memory.cc, memory_cgroup.cc, memory_commit.cc):
// the findings check_memory yields and the formula they share.

#include <cstdint>
#include <string>

#include "core/checks/check.h"

namespace headroom {

/// Resident memory of the job: ranks x (workers + 1) x worker_rss (each rank's
/// main process plus its DataLoader workers); 0 without --worker-rss.
[[nodiscard]] std::uint64_t job_memory_need(const CheckOptions& options);
/// The need as people read it: "2 ranks x (4 workers + 1) x 3.0 GiB"; empty without --worker-rss.
[[nodiscard]] std::string job_memory_formula(const CheckOptions& options);
/// need x 1.1, rounded up: a need that does not fit with 10% to spare is a warning.
[[nodiscard]] std::uint64_t with_margin(std::uint64_t need);
/// DataLoader workers per rank whose processes fit in `room`: room / (ranks x
/// worker_rss) - 1 (the main process is one of them); 0 without --worker-rss.
[[nodiscard]] std::uint64_t workers_that_fit(const CheckOptions& options, std::uint64_t room);

/// memory.available: MemAvailable, swap and PSI against the job's need.
[[nodiscard]] Finding check_memory_available(const CheckInput& input);
/// memory.cgroup: the memory cgroup's limit, usage and OOM kills against the job's need.
[[nodiscard]] Finding check_memory_cgroup(const CheckInput& input);
/// memory.commit: the overcommit policy, RLIMIT_AS and vm.max_map_count against the job.
[[nodiscard]] Finding check_memory_commit(const CheckInput& input);

}  // namespace headroom
