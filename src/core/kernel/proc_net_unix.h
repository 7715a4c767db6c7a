#pragma once
// Bound AF_UNIX sockets of every network namespace this /proc shows. Each namespace has
// its own table, /proc/<pid>/net/unix for any of its processes (readable by anyone); the
// inode of that file is the namespace's, so each table is read once. Doc: proc(5)
// "/proc/net/unix". Columns: Num RefCount Protocol Flags Type St Inode [Path]. Quirks:
// Path is the name given to bind(2), relative to the binder's cwd when relative, and as
// seen from the binder's mount namespace (a container's /tmp/x is the host's
// /var/lib/.../tmp/x); abstract names start with '@'; unbound sockets have no Path. So a
// socket file is taken as live when its path or its last component matches a bound name.

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The set of bound filesystem socket paths (abstract ones left out).
[[nodiscard]] std::unordered_set<std::string> parse_proc_net_unix(std::string_view text);

/// Bound socket names of every network namespace seen.
struct LiveSockets {
  std::unordered_set<std::string> paths;  ///< as given to bind(2)
  std::unordered_set<std::string> names;  ///< their last components
  std::size_t namespaces = 0;             ///< tables read
  std::vector<int> unread_pids;           ///< pids whose namespace's table could not be read

  /// Whether a socket file at `path` (as this host shows it) named `name` may be bound:
  /// its path or its name is a bound one. Conservative: a namesake keeps it too.
  [[nodiscard]] bool maybe_bound(std::string_view path, std::string_view name) const;
};

/// Reads <root>/proc/net/unix and the table of each other network namespace.
[[nodiscard]] Result<LiveSockets> read_live_sockets(const Context& context);

}  // namespace headroom
