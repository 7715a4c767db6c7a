#pragma once
// The kernel's policy for committing memory. Sources: /proc/sys/vm/overcommit_memory,
// overcommit_ratio and overcommit_kbytes (Documentation/mm/overcommit-accounting.rst,
// Documentation/admin-guide/sysctl/vm.rst); CommitLimit and Committed_AS are in
// /proc/meminfo (kernel/meminfo.h).
// Quirks: in mode 2 CommitLimit is overcommit_kbytes when that is not 0, else
// (MemTotal - hugetlb pages) x overcommit_ratio / 100, plus SwapTotal in both cases;
// the files are the host's even inside a container (vm.* is not namespaced).

#include <cstdint>
#include <string_view>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// vm.overcommit_memory: 0 heuristic (the default), 1 always, 2 never (strict accounting).
enum class OvercommitMode { kHeuristic = 0, kAlways = 1, kStrict = 2 };

/// "heuristic", "always", "strict".
[[nodiscard]] std::string_view to_string(OvercommitMode mode);

/// The three overcommit sysctls.
struct Overcommit {
  OvercommitMode mode = OvercommitMode::kHeuristic;
  std::uint64_t ratio_percent = 50;  ///< vm.overcommit_ratio
  std::uint64_t kbytes = 0;          ///< vm.overcommit_kbytes, in KiB; 0 means "use the ratio"
};

/// Reads the three files; an Error names the one that could not be read or holds no valid mode.
[[nodiscard]] Result<Overcommit> read_overcommit(const Context& context);

}  // namespace headroom
