#pragma once
// The post-mortem of a supervised job: joins what headroom saw (exit statuses
// of the tree, forwarded signals, an ENOSPC stall), the kernel's OOM kills for
// pids of the tree, the memory cgroup's OOM counter, the resource timeline of
// the last minutes, and explain's diagnosis of the captured output into one
// verdict: which process, what ended it, which resource, the evidence, the fix.
// Cause names are explain's (shm_too_small, disk_full, host_oom, ...).

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "core/kernel/kmsg.h"
#include "core/signal_names.h"
#include "core/signatures/diagnosis.h"
#include "core/supervise/supervisor.h"

namespace headroom {

/// What the post-mortem joins, gathered by the caller after supervise().
struct PostmortemInput {
  const SupervisionResult* run = nullptr;
  const Diagnosis* diagnosis = nullptr;  ///< explain over the output, host-confirmed; may be null
  std::vector<std::string> remedy;       ///< explain's remedies for the environment
  /// OOM kills in the kernel log during the job (all of them; filtered here by pid and cgroup).
  std::vector<OomEvent> oom_events;
  /// The kernel log was read and reaches back to the job's start, so `oom_events` holds
  /// every OOM kill of the run: none means the kernel OOM killer ended nothing.
  bool kernel_log_covers_job = false;
  /// The job's memory cgroup (path and limit) and its OOM-kill counter before and after.
  std::optional<std::string> cgroup_path;
  std::optional<std::uint64_t> cgroup_limit_bytes;
  std::optional<std::uint64_t> cgroup_oom_kills_before;
  std::optional<std::uint64_t> cgroup_oom_kills_after;
  /// /dev/shm bytes the job shape needs (check's dataloader + NCCL need), when given.
  std::optional<std::uint64_t> shm_need_bytes;
  /// Things that could not be seen, e.g. "kernel log: Permission denied (dmesg_restrict=1)".
  std::vector<std::string> could_not_see;
  /// The job's output as explain read it (the kept tail; line numbers count from its start).
  std::string_view output;
};

/// The process the verdict is about.
struct Culprit {
  pid_t pid = 0;
  std::string role;     ///< "DataLoader worker", "rank 1", "main", ...
  std::string role_id;  ///< "dataloader_worker", "rank", "main", "torch_shm_manager", "other"
  std::string name;     ///< comm, when seen
  std::string fate;     ///< "killed by SIGKILL (OOM killer)", "exited with status 1", ...
};

/// One exit of a process of the job, named.
struct NamedExit {
  pid_t pid = 0;
  std::string role;
  std::string fate;
  bool abnormal = false;
};

/// The one answer.
struct Postmortem {
  bool needed = false;  ///< the job ended badly: report it
  /// Ended by a signal sent to headroom and forwarded, or by SIGPIPE when the
  /// reader of its output went away: no diagnosis.
  bool stopped = false;
  std::string cause;       ///< explain's names; "unknown" when nothing explains it
  std::string confidence;  ///< "high", "medium", "low"
  bool host_cause = false;
  std::string summary;  ///< one line: what happened to which process and why
  std::optional<Culprit> process;
  std::string resource;  ///< "/dev/shm", "/ckpt (tmpfs)", "memory cgroup /x (limit 1.0 GiB)", ...
  std::vector<Evidence> evidence;      ///< measured numbers
  std::vector<std::string> log_lines;  ///< "line 42: RuntimeError: ..."
  std::vector<std::string> reasoning;
  std::vector<std::string> fix;
  std::vector<NamedExit> exits;
  std::vector<std::string> could_not_see;
};

/// Joins everything into the verdict (pure: no I/O).
[[nodiscard]] Postmortem build_postmortem(const PostmortemInput& input);

/// "exited with status 1", "killed by SIGKILL".
[[nodiscard]] std::string describe_wait_status(int wait_status);

}  // namespace headroom
