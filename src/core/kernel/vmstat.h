#pragma once
// /proc/vmstat: kernel VM counters, one "name value" per line.
// Format: undocumented beyond proc(5); names come from mm/vmstat.c.
// Quirks: "oom_kill" exists since Linux 4.13 (commit 8e675f7af507); older
// kernels lack it, so it is optional. Every value is a plain count.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// The vmstat counters `watch` uses.
struct Vmstat {
  std::optional<std::uint64_t> oom_kill;  ///< processes killed by the OOM killer since boot
};

/// Parses vmstat text; a line without a numeric value is an Error naming the line.
[[nodiscard]] Result<Vmstat> parse_vmstat(std::string_view text);
/// Reads <root>/proc/vmstat.
[[nodiscard]] Result<Vmstat> read_vmstat(const Context& context);

}  // namespace headroom
