#pragma once
// The audit log of `clean --yes`: one JSON object per line per removal,
// appended with O_APPEND so concurrent runs never interleave within a line.
// Format documented in docs/who-clean.md.

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/clean/clean.h"
#include "core/error.h"

namespace headroom {

/// The JSON of one removal: time, action, kind, path, device, inode, uid, owner, bytes, ...
[[nodiscard]] nlohmann::ordered_json audit_record(const CleanItem& item,
                                                  std::chrono::system_clock::time_point when);
/// Appends audit_record(item) as one line to `log` (created 0600, parents 0700).
[[nodiscard]] Result<void> append_audit(const std::filesystem::path& log, const CleanItem& item,
                                        std::chrono::system_clock::time_point when);

}  // namespace headroom
