#pragma once
// Remedy lines in the dialect of the detected runtime: the exact flag, manifest
// field or command that gives the job more of a resource.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "core/probes/mountinfo.h"
#include "core/probes/runtime.h"
#include "core/syscalls.h"

namespace headroom {

/// How to give /dev/shm at least `bytes`: docker --shm-size, a Kubernetes
/// emptyDir of medium Memory, or a tmpfs remount on a host.
[[nodiscard]] std::vector<std::string> shm_resize_remedies(const Runtime& runtime,
                                                           std::uint64_t bytes);

/// How the tools that set one resource limit (RLIMIT_*) name it.
struct RlimitNames {
  std::string_view ulimit;       ///< bash's ulimit flag: "-n", "-l", "-f", "-v"
  std::uint64_t ulimit_unit;     ///< what one unit of ulimit's and limits.conf's numbers is: 1
                                 ///< for a count, 1024 bytes for -l, -f and -v
  std::string_view limits_conf;  ///< the item of /etc/security/limits.conf: "nofile", "memlock"
  std::string_view systemd;      ///< the unit directive: "LimitNOFILE", "LimitMEMLOCK"
  std::string_view docker;       ///< docker run --ulimit's name; empty when docker has none
  std::string_view slurm;        ///< srun/sbatch --propagate's name: "NOFILE", "MEMLOCK"
};

/// How to raise a limit whose current value is `current` to `target` (nullopt:
/// unlimited; a number is in the limit's own unit, bytes or a count): the soft
/// limit up to the hard one, the runtime's flag (docker --ulimit, the container
/// runtime's limit under Kubernetes, Slurm's --propagate), limits.conf and systemd.
[[nodiscard]] std::vector<std::string> raise_limit_remedies(const Runtime& runtime,
                                                            const RlimitNames& names,
                                                            const Limit& current,
                                                            std::optional<std::uint64_t> target);

/// The ulimit command that sets the limit to `value` (in bytes or a count): "ulimit -f 8192",
/// "ulimit -l unlimited".
[[nodiscard]] std::string ulimit_command(const RlimitNames& names, std::uint64_t value);

/// Whether a limit counts bytes or things, for limit_text.
enum class LimitUnit { kCount, kBytes };
/// A limit as evidence: the number, or the string "unlimited" for RLIM_INFINITY.
[[nodiscard]] Evidence::Value limit_value(std::uint64_t value);
/// A limit for people: "unlimited", "256", or "8.0 MiB" for bytes.
[[nodiscard]] std::string limit_text(std::uint64_t value, LimitUnit unit = LimitUnit::kCount);

/// Adds the capacity of a filesystem as evidence (avail_bytes, total_bytes,
/// used_percent, free_inodes, inodes_used_percent, read_only) and, when known,
/// the mount holding it (mount_point, fstype).
void add_filesystem_evidence(Finding& finding, const FsStats& stats, const MountEntry* mount);

}  // namespace headroom
