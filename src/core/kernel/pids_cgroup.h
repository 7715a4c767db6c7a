#pragma once
// The pids cgroup of a process, cgroup v1 or v2: how many tasks it may hold and holds.
// Sources: /proc/<pid>/cgroup and /proc/<pid>/mountinfo (located as in cgroup.h),
// then pids.max and pids.current of the cgroup and its ancestors
// (Documentation/admin-guide/cgroup-v1/pids.rst, cgroup-v2.rst "PID").
// Quirks: the controller counts tasks, so every thread takes one pid like a
// process; "max" means unlimited and the root cgroup has neither file; a
// nested cgroup may be unlimited while its parent is not, and every ancestor's
// pids.current includes the descendants, so the room left is the smallest
// (pids.max - pids.current) on the way up to the mount's root. Docker's
// --pids-limit and the kubelet's podPidsLimit are written here.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/kernel/cgroup.h"

namespace headroom {

/// The pids cgroup of a process and the ancestor whose limit leaves the least room.
struct PidsCgroup {
  CgroupVersion version = CgroupVersion::kV2;
  std::string path;                 ///< as /proc/<pid>/cgroup names it
  std::filesystem::path directory;  ///< rooted; use SysRoot::display
  std::uint64_t current = 0;        ///< pids.current of the process's own cgroup
  bool hierarchy_root = false;      ///< in the root cgroup: no pids files, no limit
  /// The binding limit: the cgroup (own or ancestor) with the least room; nullopt = none.
  std::optional<std::uint64_t> limit;
  std::uint64_t limit_current = 0;        ///< pids.current of the binding cgroup
  std::filesystem::path limit_directory;  ///< rooted dir of the binding cgroup

  /// Tasks that can still start under the binding limit; nullopt when unlimited.
  [[nodiscard]] std::optional<std::uint64_t> room() const;
};

/// Finds and reads the pids cgroup of `pid`: the v1 pids hierarchy when one is
/// mounted, else the v2 unified one. kNotFound when the controller is absent.
[[nodiscard]] Result<PidsCgroup> read_pids_cgroup(const Context& context,
                                                  std::string_view pid = "self");

}  // namespace headroom
