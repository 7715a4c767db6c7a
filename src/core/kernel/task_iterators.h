#pragma once
// Every process's open files and mapped files, read in the kernel by BPF task
// iterators (Linux 5.8+, with BTF; root, or CAP_BPF and CAP_PERFMON) instead of
// a readlink per fd and the text of every maps file: the task_file iterator
// walks each process's fd table, the task_vma iterator its mappings, and the
// task iterator names each process (comm, effective uid). A file's name is the
// kernel's d_path, as readlink of /proc/<pid>/fd/<n> and the maps text give it;
// only files whose name is under a wanted path are reported, and a file that is
// not wanted is named once per run (a library mapped by a thousand processes is
// tested once; the rest of its records cost a hash lookup).
//
// The programs are assembled here, at this kernel's field offsets (read from its
// BTF), and loaded with the bpf(2) syscall directly: no compiler, no object file,
// no libbpf (whose full BTF parse and feature probes cost 25-35 ms, more than the
// walk itself). Anything the kernel refuses is an Error; the caller then reads
// /proc instead.
//
// Pids are those of the caller's pid namespace (the iterators visit only its
// tasks and those of namespaces below it, at most 7 deep). Only thread-group leaders are
// reported, as /proc/<pid> lists them.

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace headroom {

/// One process as the task iterator saw it.
struct KernelTask {
  int pid = 0;
  uid_t euid = 0;                     ///< in the initial user namespace
  std::uint64_t mount_namespace = 0;  ///< equal for tasks of one mount namespace; 0 unknown
  std::string_view command;           ///< comm
};

/// One open file (fd >= 0) or one mapping of a file (fd == -1).
struct KernelFile {
  int pid = 0;
  int fd = -1;
  std::uint64_t device = 0;  ///< makedev() of the file's superblock
  std::uint64_t inode = 0;
  std::uint64_t start = 0;  ///< a mapping's addresses
  std::uint64_t end = 0;
  std::uint64_t size = 0;  ///< the inode's size (what stat says on a local filesystem)
  std::string_view name;   ///< d_path, " (deleted)" included; empty: longer than a page
};

/// What one run of the iterators found. The views point into its own buffers.
struct KernelFiles {
  std::vector<KernelTask> tasks;     ///< pid order
  std::vector<KernelFile> files;     ///< pid order, then fd
  std::vector<KernelFile> mappings;  ///< pid order, then address
  std::vector<std::unique_ptr<char[]>> buffers;
};

class TaskIterators {
 public:
  /// Assembles the three programs (run() loads them). `prefixes`: only files whose name is
  /// at or under one of them are reported (path_at_or_under; none: every file). Error
  /// when BPF, BTF or a needed field is missing or the kernel refuses (not root,
  /// lockdown, seccomp).
  [[nodiscard]] static Result<TaskIterators> load(const std::vector<std::string>& prefixes);

  TaskIterators(TaskIterators&&) noexcept;
  TaskIterators& operator=(TaskIterators&&) noexcept;
  ~TaskIterators();

  /// Loads and runs the iterators asked for: the mappings on a second thread, the tasks
  /// and the files on this one; then each thread calls `alongside` (the caller's own
  /// work, which the two share: it must be safe to run twice at once). Error when the
  /// kernel refuses a program or a walk fails midway (the caller falls back to /proc).
  [[nodiscard]] Result<KernelFiles> run(bool files, bool mappings,
                                        const std::function<void()>& alongside);

 private:
  struct State;
  explicit TaskIterators(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace headroom
