#pragma once
// Sampling the job's process tree: every descendant of headroom (which, as a
// child subreaper, stays the ancestor of orphaned workers), with its memory,
// shared memory mapped and open fds against its limit, and its role.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/kernel/proc_pid_status.h"
#include "core/supervise/roles.h"
#include "core/syscalls.h"

namespace headroom {

/// One process at one sample.
struct ProcessSample {
  ProcessIdentity identity;
  std::uint64_t rss_bytes = 0;
  std::optional<std::uint64_t> shmem_bytes;  ///< RssShmem: /dev/shm segments mapped
  std::optional<std::uint64_t> fds;          ///< nullopt: /proc/<pid>/fd unreadable
  std::optional<std::uint64_t> fd_limit;     ///< soft RLIMIT_NOFILE
};

/// The whole tree at one instant.
struct TreeSample {
  std::chrono::system_clock::time_point time;
  std::vector<ProcessSample> processes;
  std::uint64_t rss_bytes = 0;             ///< sum over the tree (shared pages counted per process)
  std::uint64_t shmem_bytes = 0;           ///< sum of RssShmem
  std::vector<PartialFailure> unreadable;  ///< what could not be read, and why
};

/// Samples the descendants of one process and remembers every process it saw,
/// so that a pid that has exited can still be named by its role.
class ProcessTreeSampler {
 public:
  /// `ancestor`: headroom's own pid; `main_pid`: the job it started.
  ProcessTreeSampler(Context context, pid_t ancestor, pid_t main_pid);

  /// Scans /proc once.
  [[nodiscard]] TreeSample sample();
  /// The identity of a pid seen in any sample, with its role then.
  [[nodiscard]] std::optional<ProcessIdentity> known(pid_t pid) const;
  /// Every pid seen, by pid.
  [[nodiscard]] const std::map<pid_t, ProcessIdentity>& seen() const { return seen_; }

 private:
  ProcessIdentity identify(const ProcStatus& status);

  Context context_;
  pid_t ancestor_;
  pid_t main_pid_;
  std::map<pid_t, ProcessIdentity> seen_;
  std::map<pid_t, std::optional<std::uint64_t>> fd_limits_;
};

}  // namespace headroom
