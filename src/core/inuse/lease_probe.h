#pragma once
// Asking the kernel whether anyone else has a file open. A write lease
// (fcntl F_SETLEASE, F_WRLCK) is granted only when no other open file description of
// the inode exists on the machine: every process of every user, in every pid
// namespace, counted whether or not headroom may inspect it, and a file mapped after
// its fd was closed too (the mapping keeps its open file). The lease is released at
// once. This is the proof `clean` and `prune` use for regular files; /proc only
// names the holders. An open() by someone else during those microseconds waits for the
// release; the break is announced with SIGURG (or SIGWINCH), never the default SIGIO
// that would end this process. Leases need the caller to own the file or CAP_LEASE (root), and
// a filesystem that supports them (not NFS): otherwise the answer is kUnknown.
//
// And who cannot be inspected without harm: kernel threads hold no files, and in a pid
// namespace of its own (a container, unshare -p) headroom cannot see processes outside it.

#include <string>

#include "core/context.h"

namespace headroom {

/// "unused", "in use", "unknown".
[[nodiscard]] std::string to_string(LeaseAnswer answer);

/// True when `pid` is a kernel thread (PF_KTHREAD in /proc/<pid>/stat, readable by all):
/// it has no files of its own to hold.
[[nodiscard]] bool is_kernel_thread(const Context& context, int pid);

/// True when this /proc shows the initial pid namespace: pid 2 is kthreadd (ppid 0, a
/// kernel thread). Kernel threads live only there, so in a container or under
/// `unshare -p` none is visible and processes outside cannot be seen.
[[nodiscard]] bool sees_initial_pid_namespace(const Context& context);

}  // namespace headroom
