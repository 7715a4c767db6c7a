#pragma once
// /proc/sysvipc/shm: System V shared memory segments of the reader's IPC namespace.
// Doc: proc(5) "/proc/sysvipc"; ipc/shm.c sysvipc_shm_proc_show().
// Columns: key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime
// ctime rss swap (rss and swap since Linux 4.1). The first line is a header.
// Quirks: key is a signed decimal (IPC_PRIVATE is 0); perms is octal; columns
// are aligned with spaces, so split on runs of blanks.

#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/inuse/inuse_index.h"

namespace headroom {

/// Parses the whole file, header included; a malformed row is an Error naming its line.
[[nodiscard]] Result<std::vector<SysvSegment>> parse_sysvipc_shm(std::string_view text);
/// Reads <root>/proc/sysvipc/shm.
[[nodiscard]] Result<std::vector<SysvSegment>> read_sysvipc_shm(const Context& context);

}  // namespace headroom
