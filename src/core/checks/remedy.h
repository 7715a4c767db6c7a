#pragma once
// Remedy lines in the dialect of the detected runtime: the exact flag, manifest
// field or command that gives the job more of a resource.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/finding.h"
#include "core/kernel/mountinfo.h"
#include "core/kernel/runtime.h"
#include "core/syscalls.h"

namespace headroom {

/// What was measured of the /dev/shm a remedy resizes and of the memory that backs it.
/// Unknown facts (explain --no-host) are nullopt: the remedy then says what to compare.
struct ShmFacts {
  std::optional<std::uint64_t> size_bytes;    ///< /dev/shm's size now
  std::optional<std::uint64_t> memory_bytes;  ///< the host's RAM (MemTotal)
  /// The job's memory cgroup limit: tmpfs pages are charged to it.
  std::optional<std::uint64_t> memory_limit_bytes;
  /// False when /dev/shm is missing or not a tmpfs: a tmpfs must be mounted, not resized.
  bool tmpfs = true;
};

/// The measured facts of /dev/shm, the host's RAM and this process's memory cgroup.
[[nodiscard]] ShmFacts read_shm_facts(const Context& context);

/// The one remedy for a /dev/shm that must be `bytes` large, used by check, explain, run
/// and watch: in the dialect of where the job runs (a Slurm job asks the admins first; docker
/// --shm-size; a Kubernetes emptyDir of medium Memory; a tmpfs remount on a host). Never a
/// size smaller than the one there (then what fills it must go), never more than the host's
/// RAM can back (then `lower`, the ways to need less, come first and alone). `lower` lines
/// read as commands ("fewer DataLoader workers ..."); after a resize they are alternatives.
[[nodiscard]] std::vector<std::string> shm_remedies(const Runtime& runtime, std::uint64_t bytes,
                                                    const ShmFacts& facts,
                                                    const std::vector<std::string>& lower = {});

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
