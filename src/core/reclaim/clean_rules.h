#pragma once
// The rules shared by planning and removing: protected names, ages, owners.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/reclaim/clean.h"

namespace headroom {

/// Names in the temp dir that are never removed, whatever their age or use:
/// systemd's PrivateTmp dirs, X11/ICE/font/XIM/Test socket dirs, snap's.
[[nodiscard]] bool protected_tmp_name(std::string_view name);
/// Minimum age for the temp dir (default 1 day) or /dev/shm (none by default).
[[nodiscard]] std::chrono::seconds minimum_age(const CleanOptions& options, bool tmp);
/// Pids the index could not inspect and the caller did not vouch for (ascending).
[[nodiscard]] std::vector<int> blocking_unreadable(const InUseIndex& index,
                                                   const CleanOptions& options);
/// "in use by pid 12 (python3), 40 (pt_data_worker)".
[[nodiscard]] std::string held_reason(const InUseIndex& index, const std::vector<int>& pids);
/// Name used while an entry is being removed: unguessable, so nobody opens it by name.
[[nodiscard]] std::string quarantine_name(std::uint64_t counter);

}  // namespace headroom
