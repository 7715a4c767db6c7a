#pragma once
// The memory cgroup of a process, cgroup v1 or v2, and its limit, usage and OOM kills.
// Sources: /proc/<pid>/cgroup (Documentation/admin-guide/cgroup-v1/cgroups.rst and
// cgroup-v2.rst, "hierarchy-id:controllers:path"), /proc/<pid>/mountinfo (where each
// hierarchy is mounted, and which part of it: a container sees its own cgroup as
// the mount's root), then the files of the cgroup directory:
//   v1 (Documentation/admin-guide/cgroup-v1/memory.rst): memory.limit_in_bytes,
//      memory.usage_in_bytes, memory.max_usage_in_bytes, memory.oom_control
//      ("oom_kill N" since 4.13), memory.memsw.limit_in_bytes, memory.stat;
//   v2 (cgroup-v2.rst, "Memory"): memory.max, memory.current, memory.peak (5.19+),
//      memory.events ("oom_kill N"), memory.swap.max, memory.stat.
// Quirks: "unlimited" is "max" in v2 and PAGE_COUNTER_MAX x page size in v1
// (9223372036854771712 with 4 KiB pages); hybrid hosts mount v1 controllers and
// a v2 "unified" tree side by side (the memory controller is on one of them);
// a nested cgroup may be unlimited while an ancestor is not, so the effective
// limit is the smallest one on the way up to the mount's root.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/kernel/mountinfo.h"

namespace headroom {

enum class CgroupVersion { kV1, kV2 };

/// "v1" or "v2".
[[nodiscard]] std::string_view to_string(CgroupVersion version);

/// One line of /proc/<pid>/cgroup.
struct CgroupMembership {
  int hierarchy_id = 0;  ///< 0 for the v2 unified hierarchy
  std::vector<std::string>
      controllers;   ///< e.g. {"memory"}, {"cpu","cpuacct"}, {"name=systemd"}; empty for v2
  std::string path;  ///< e.g. "/docker/3f2a...", "/" (in a cgroup namespace)
};

/// Parses /proc/<pid>/cgroup text.
[[nodiscard]] Result<std::vector<CgroupMembership>> parse_proc_cgroup(std::string_view text);

/// Parses a limit file value: "max" or any value >= 2^62 (v1's unlimited) is nullopt.
[[nodiscard]] Result<std::optional<std::uint64_t>> parse_cgroup_limit(std::string_view text);

/// Parses "key value" lines (memory.stat, memory.events, memory.oom_control).
[[nodiscard]] Result<std::map<std::string, std::uint64_t, std::less<>>> parse_flat_keyed(
    std::string_view text);
/// The value of one key of such a file (its last line of that key), found by a scan: no map
/// of every line for the one a sample wants. nullopt when absent or not a number.
[[nodiscard]] std::optional<std::uint64_t> flat_keyed_value(std::string_view text,
                                                            std::string_view key);

/// Where the cgroup of one controller is, as a process sees it.
struct CgroupLocation {
  CgroupVersion version = CgroupVersion::kV2;
  std::string path;                   ///< as /proc/<pid>/cgroup names it
  std::filesystem::path directory;    ///< host path, not rooted
  std::filesystem::path mount_point;  ///< host path of the hierarchy's mount, not rooted
};

/// Finds the cgroup of `controller` ("memory", "pids"): its v1 hierarchy when one
/// is bound, else the v2 unified one. kNotFound when it is not mounted.
[[nodiscard]] Result<CgroupLocation> locate_cgroup(const std::vector<CgroupMembership>& memberships,
                                                   const std::vector<MountEntry>& mounts,
                                                   std::string_view controller);
/// Reads /proc/<pid>/cgroup (and mountinfo, unless `mounts` is given) and
/// locates the cgroup of `controller` for that process.
[[nodiscard]] Result<CgroupLocation> find_cgroup(const Context& context, std::string_view pid,
                                                 std::string_view controller,
                                                 const std::vector<MountEntry>* mounts = nullptr);

/// The memory cgroup of a process, read at one moment.
struct MemoryCgroup {
  CgroupVersion version = CgroupVersion::kV2;
  std::string path;  ///< cgroup path as /proc/<pid>/cgroup names it, e.g. "/kubepods.slice/..."
  std::filesystem::path directory;  ///< where its files were read (rooted; use SysRoot::display)
  std::optional<std::uint64_t> limit_bytes;  ///< this cgroup's own limit; nullopt = unlimited
  /// The smallest limit of this cgroup and its ancestors visible under the mount; nullopt = none.
  std::optional<std::uint64_t> effective_limit_bytes;
  std::filesystem::path effective_limit_directory;  ///< the (rooted) dir that sets it
  std::uint64_t usage_bytes = 0;                    ///< memory.current / memory.usage_in_bytes
  std::optional<std::uint64_t> peak_bytes;          ///< memory.peak / memory.max_usage_in_bytes
  /// Swap the cgroup may use beyond limit_bytes: v2 memory.swap.max; v1
  /// memsw.limit - limit. nullopt = unlimited or not accounted.
  std::optional<std::uint64_t> swap_limit_bytes;
  std::optional<std::uint64_t> oom_kills;   ///< oom_kill counter; nullopt on kernels without it
  std::optional<std::uint64_t> oom_events;  ///< v2 "oom" events (limit hit, reclaim failed)
  std::map<std::string, std::uint64_t, std::less<>> stat;  ///< memory.stat

  /// Room left under the effective limit (limit - usage, 0 when over); nullopt when unlimited.
  [[nodiscard]] std::optional<std::uint64_t> headroom_bytes() const;
};

/// Finds and reads the memory cgroup of `pid` ("self", "1", "1234"): the v1
/// memory hierarchy when one is mounted, else the v2 unified one. kNotFound
/// when the process is in no memory cgroup or its hierarchy is not mounted.
/// `mounts`: the process's mount table when the caller has it already
/// (a watch sample); read from /proc/<pid>/mountinfo when null. Without
/// `details` (a sample every few seconds) the peak, the swap limit and, on v2,
/// memory.stat are not read: 2-3 files fewer per sample.
[[nodiscard]] Result<MemoryCgroup> read_memory_cgroup(
    const Context& context, std::string_view pid = "self",
    const std::vector<MountEntry>* mounts = nullptr, bool details = true);
/// The same for a memory cgroup already located (find_cgroup(..., "memory")): a watch
/// locates its cgroup once in a while, not at every sample. kNotFound when its files are
/// gone (the cgroup was removed: locate it again).
[[nodiscard]] Result<MemoryCgroup> read_memory_cgroup_at(const Context& context,
                                                         const CgroupLocation& located,
                                                         bool details);

}  // namespace headroom
