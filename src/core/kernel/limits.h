#pragma once
// /proc/<pid>/limits: the resource limits (RLIMIT_*) of a process.
// Source: fs/proc/base.c proc_pid_limits(); see proc(5), "/proc/pid/limits".
// Quirks: a header line first; the limit name is a left-aligned column of 25
// characters and contains spaces ("Max open files"); values are a number or
// "unlimited"; the units column is empty for "Max nice priority" and
// "Max realtime priority".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/syscalls.h"

namespace headroom {

/// One row of /proc/<pid>/limits.
struct LimitEntry {
  std::string name;   ///< e.g. "Max open files"
  Limit limit;        ///< "unlimited" is Limit::kUnlimited
  std::string units;  ///< e.g. "files"; empty for priorities
};

/// Parses the text of /proc/<pid>/limits; a row that does not parse is an Error naming the line.
[[nodiscard]] Result<std::vector<LimitEntry>> parse_limits(std::string_view text);
/// Reads /proc/<pid>/limits of the context's process.
[[nodiscard]] Result<std::vector<LimitEntry>> read_limits(const Context& context);
/// The row called `name`, e.g. find_limit(rows, "Max open files").
[[nodiscard]] std::optional<Limit> find_limit(const std::vector<LimitEntry>& rows,
                                              std::string_view name);
/// One limit of the context's process, e.g. read_limit(context, "Max locked memory");
/// an Error names the file when it cannot be read or has no such row.
[[nodiscard]] Result<Limit> read_limit(const Context& context, std::string_view name);

/// RLIMIT_NOFILE of the context's process: /proc/<pid>/limits, or getrlimit(2)
/// through context.syscalls when that file cannot be read and the process is "self".
/// `source` is set to where the value came from.
[[nodiscard]] Result<Limit> read_open_files_limit(const Context& context, std::string& source);

}  // namespace headroom
