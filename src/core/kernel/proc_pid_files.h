#pragma once
// The other per-process files the supervisor reads: /proc/<pid>/cmdline
// (NUL-separated argv), /proc/<pid>/environ (NUL-separated, the environment
// at exec time, or the parent's copy for a forked child such as a DataLoader
// worker) and /proc/<pid>/fd (one entry per open descriptor); the limits
// come from core/kernel/limits.h. https://docs.kernel.org/filesystems/proc.html
// Quirks: environ and fd need the same uid (or CAP_SYS_PTRACE); unreadable is
// reported, not guessed.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context.h"
#include "core/error.h"

namespace headroom {

/// Splits a NUL-separated /proc file (cmdline, environ) into its strings.
[[nodiscard]] std::vector<std::string> split_nul(std::string_view text);
/// The variables named in `wanted` from environ text (others are not kept: secrets).
[[nodiscard]] std::map<std::string, std::string> parse_environ(
    std::string_view text, const std::vector<std::string_view>& wanted);

/// argv of a process (empty for kernel threads and zombies).
[[nodiscard]] Result<std::vector<std::string>> read_proc_cmdline(const Context& context, pid_t pid);
/// The wanted environment variables of a process.
[[nodiscard]] Result<std::map<std::string, std::string>> read_proc_environ(
    const Context& context, pid_t pid, const std::vector<std::string_view>& wanted);
/// Number of open descriptors of a process.
[[nodiscard]] Result<std::uint64_t> count_proc_fds(const Context& context, pid_t pid);

}  // namespace headroom
