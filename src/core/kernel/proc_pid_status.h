#pragma once
// /proc/<pid>/status: name, parent, uid and memory of one process.
// https://docs.kernel.org/filesystems/proc.html (table 1-2)
// Quirks: sizes are "kB" meaning KiB; RssShmem (kernel 4.5+) counts the shared
// memory the process has mapped and touched, which for a DataLoader is the
// /dev/shm segments of its batches; kernel threads have no Vm* lines at all.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The fields of /proc/<pid>/status that the supervisor uses.
struct ProcStatus {
  std::string name;  ///< comm, at most 15 bytes
  pid_t pid = 0;
  pid_t ppid = 0;
  uid_t uid = 0;                ///< real uid
  uid_t fs_uid = 0;             ///< the uid file permissions are checked against (Uid's 4th field)
  gid_t fs_gid = 0;             ///< likewise for groups (Gid's 4th field)
  std::vector<gid_t> groups;    ///< supplementary groups
  std::uint64_t rss_bytes = 0;  ///< VmRSS
  std::optional<std::uint64_t> rss_shmem_bytes;  ///< RssShmem, absent before 4.5
  std::uint64_t threads = 0;
};

/// Parses the text of /proc/<pid>/status.
[[nodiscard]] Result<ProcStatus> parse_proc_status(std::string_view text);
/// Reads /proc/<pid>/status under the context's root.
[[nodiscard]] Result<ProcStatus> read_proc_status(const Context& context, pid_t pid);

}  // namespace headroom
