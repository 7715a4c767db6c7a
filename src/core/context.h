#pragma once
// Everything the core needs from the outside world, passed in explicitly (like
// leveldb's Options{env}): the root prefix, the syscall seam, the environment
// and working directory of the job being checked.

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/sys_root.h"
#include "core/syscalls.h"

namespace headroom {

/// The inputs of every probe and check. The core never reads argv, getenv or
/// the process's cwd itself; front ends fill this in.
struct Context {
  SysRoot root;
  const Syscalls* syscalls = nullptr;
  /// Environment of the job (TMPDIR, KUBERNETES_SERVICE_HOST, SLURM_JOB_ID, ...).
  std::map<std::string, std::string> environment;
  /// Working directory of the job, as a host path (not re-rooted).
  std::filesystem::path working_directory = "/";
  /// The pid whose view (mountinfo, cgroup, limits) is examined; "self" by default.
  std::string pid = "self";

  /// The value of an environment variable, when set and not empty.
  [[nodiscard]] std::optional<std::string> env(const std::string& name) const {
    const auto found = environment.find(name);
    if (found == environment.end() || found->second.empty()) return std::nullopt;
    return found->second;
  }
  /// Path of a file of the examined process, e.g. process_file("mountinfo").
  [[nodiscard]] std::filesystem::path process_file(std::string_view name) const {
    return root.proc(pid + "/" + std::string(name));
  }
};

}  // namespace headroom
