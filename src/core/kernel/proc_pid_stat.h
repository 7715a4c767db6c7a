#pragma once
// /proc/<pid>/stat (readable by anyone, whatever hidepid hides of the rest): who cannot
// be inspected without harm. Kernel threads hold no files, and in a pid namespace of its
// own (a container, unshare -p) headroom cannot see the processes outside it.
// Doc: proc(5) "/proc/pid/stat"; the comm field may hold spaces and parentheses.

#include <string>

#include "core/context.h"

namespace headroom {

/// True when `pid` is a kernel thread (PF_KTHREAD in /proc/<pid>/stat, readable by all):
/// it has no files of its own to hold.
[[nodiscard]] bool is_kernel_thread(const Context& context, int pid);

/// True when this /proc shows the initial pid namespace: pid 2 is kthreadd (ppid 0, a
/// kernel thread). Kernel threads live only there, so in a container or under
/// `unshare -p` none is visible and processes outside cannot be seen.
[[nodiscard]] bool sees_initial_pid_namespace(const Context& context);

}  // namespace headroom
