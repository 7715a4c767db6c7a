#pragma once
// The tasks (threads) one user owns across the host: what RLIMIT_NPROC counts.
// Source: the "Uid" (real uid) and "Threads" lines of every /proc/<pid>/status
// (https://docs.kernel.org/filesystems/proc.html, table 1-2; parsed by
// kernel/proc_pid_status), and the Cpus_allowed_list line of the examined process.
// Quirks: fork() and pthread_create() fail with EAGAIN once the real uid's task
// count reaches RLIMIT_NPROC (kernel/fork.c copy_process), counted over the
// whole host (per user namespace), not per job; threads count like processes;
// uid 0 and tasks with CAP_SYS_RESOURCE or CAP_SYS_ADMIN are exempt; a process
// may exit between listing /proc and reading its status (skipped); in a pid
// namespace only its own processes are visible, so the count is a floor.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The real uid of the examined process and the tasks that uid owns.
struct UserTasks {
  uid_t uid = 0;
  std::uint64_t tasks = 0;      ///< threads of all processes whose real uid is `uid` (counted)
  std::uint64_t processes = 0;  ///< processes counted
  /// CPUs the examined process may run on (Cpus_allowed_list); nullopt when absent.
  std::optional<std::uint64_t> cpus_allowed;
};

/// Counts the CPUs of a cpu list such as "0-3,8,10-11" (Cpus_allowed_list, cpu/online).
[[nodiscard]] Result<std::uint64_t> parse_cpu_list_count(std::string_view text);
/// The value of `key` in /proc/<pid>/status text, e.g. status_field(text, "Cpus_allowed_list").
[[nodiscard]] std::optional<std::string_view> status_field(std::string_view text,
                                                           std::string_view key);
/// The CPUs a process may run on, from its /proc/<pid>/status text (Cpus_allowed_list).
[[nodiscard]] std::optional<std::uint64_t> cpus_allowed(std::string_view status_text);
/// Whether `uid` of the examined process is the host's root, the one kernel/fork.c exempts from
/// RLIMIT_NPROC (the initial user namespace's uid 0), by its /proc/<pid>/uid_map. Root in a user
/// namespace (rootless podman or docker, `unshare -r`) is an ordinary uid outside it and is
/// counted. Without a readable uid_map (no user namespaces): whether `uid` is 0.
[[nodiscard]] bool uid_is_host_root(const Context& context, uid_t uid);
/// Reads the examined process's uid and, with `count_tasks`, counts that uid's tasks over /proc
/// (one status per pid: the cost of this call on a busy host, so only when it can matter).
[[nodiscard]] Result<UserTasks> read_user_tasks(const Context& context, bool count_tasks = true);

}  // namespace headroom
