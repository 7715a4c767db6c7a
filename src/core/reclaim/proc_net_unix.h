#pragma once
// /proc/net/unix: bound AF_UNIX sockets of the reader's network namespace.
// Doc: proc(5) "/proc/net/unix". Columns: Num RefCount Protocol Flags Type St
// Inode [Path]. Quirks: Path is the name given to bind(2) (may be relative);
// abstract names start with '@'; unbound sockets have no Path.

#include <string>
#include <string_view>
#include <unordered_set>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The set of bound filesystem socket paths (abstract ones left out).
[[nodiscard]] std::unordered_set<std::string> parse_proc_net_unix(std::string_view text);
/// Reads <root>/proc/net/unix.
[[nodiscard]] Result<std::unordered_set<std::string>> read_proc_net_unix(const Context& context);

}  // namespace headroom
