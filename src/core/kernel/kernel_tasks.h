#pragma once
// The kernel's system-wide task limits and the tasks that exist now.
// Sources: /proc/sys/kernel/threads-max and /proc/sys/kernel/pid_max
// (Documentation/admin-guide/sysctl/kernel.rst), and /proc/loadavg, whose
// fourth field "running/total" counts every task (thread) on the host
// (nr_threads; proc(5), "/proc/loadavg").
// Quirks: threads-max counts threads, not processes; pid_max bounds the pid
// numbers, and every thread takes one, so both are compared with the same
// total; inside a container these are the host's values, not the container's.

#include <cstdint>
#include <string_view>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The system-wide task ceilings and the count of tasks now.
struct KernelTasks {
  std::uint64_t threads_max = 0;  ///< kernel.threads-max
  std::uint64_t pid_max = 0;      ///< kernel.pid_max
  std::uint64_t tasks = 0;        ///< all threads on the host, from /proc/loadavg
};

/// Parses /proc/loadavg ("0.00 0.01 0.05 1/213 4242") into the total task count.
[[nodiscard]] Result<std::uint64_t> parse_loadavg_tasks(std::string_view text);
/// Parses a one-number sysctl file such as /proc/sys/kernel/pid_max.
[[nodiscard]] Result<std::uint64_t> parse_sysctl_number(std::string_view text);
/// Reads a one-number file under /proc, e.g. read_sysctl_number(context, "sys/kernel/pid_max").
[[nodiscard]] Result<std::uint64_t> read_sysctl_number(const Context& context,
                                                       std::string_view relative);
/// Reads the three numbers; an Error names the file that could not be read.
[[nodiscard]] Result<KernelTasks> read_kernel_tasks(const Context& context);

}  // namespace headroom
