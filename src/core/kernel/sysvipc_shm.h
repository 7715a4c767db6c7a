#pragma once
// /proc/sysvipc/shm: System V shared memory segments of the reader's IPC namespace.
// Doc: proc(5) "/proc/sysvipc"; ipc/shm.c sysvipc_shm_proc_show().
// Columns: key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime
// ctime rss swap (rss and swap since Linux 4.1). The first line is a header.
// Quirks: key is a signed decimal (IPC_PRIVATE is 0); perms is octal; columns
// are aligned with spaces, so split on runs of blanks.

#include <sys/types.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// A System V shared memory segment (/proc/sysvipc/shm).
struct SysvSegment {
  std::int64_t key = 0;
  int shmid = 0;
  unsigned perms = 0;  ///< octal mode bits
  std::uint64_t size_bytes = 0;
  int creator_pid = 0;            ///< cpid
  int last_pid = 0;               ///< lpid: last shmat/shmdt
  std::uint64_t attachments = 0;  ///< nattch; 0 means nobody has it attached
  uid_t uid = 0;
  gid_t gid = 0;
  uid_t creator_uid = 0;
  gid_t creator_gid = 0;
  std::int64_t attach_time = 0;  ///< atime, seconds since the epoch; 0 = never
  std::int64_t detach_time = 0;  ///< dtime
  std::int64_t change_time = 0;  ///< ctime
  std::uint64_t rss_bytes = 0;   ///< resident (kernel >= 4.1 prints rss/swap)
  std::uint64_t swap_bytes = 0;
};

/// Parses the whole file, header included; a malformed row is an Error naming its line.
[[nodiscard]] Result<std::vector<SysvSegment>> parse_sysvipc_shm(std::string_view text);
/// Reads <root>/proc/sysvipc/shm.
[[nodiscard]] Result<std::vector<SysvSegment>> read_sysvipc_shm(const Context& context);

}  // namespace headroom
