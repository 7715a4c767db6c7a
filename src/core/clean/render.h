#pragma once
// The text and JSON of `headroom clean` (docs/who-clean.md, docs/json.md): the plan, and
// what --yes removed. The CLI adds flags, exit codes and the audit log's errors on stderr.

#include <nlohmann/json.hpp>
#include <string>

#include "core/clean/clean.h"
#include "core/context.h"

namespace headroom {

/// Where removals are logged unless --audit-log says: /var/log/headroom/clean.log for
/// root, else $XDG_STATE_HOME/headroom/clean.log or ~/.local/state/headroom/clean.log
/// ("" when none of these is known).
[[nodiscard]] std::filesystem::path default_audit_log(const Context& context);

/// The plan: {"mode": "plan", "items", "total_bytes", "kept", ...}.
[[nodiscard]] nlohmann::ordered_json clean_plan_to_json(const CleanPlan& plan);
/// What --yes did: {"mode": "apply", "removed", "freed_bytes", "skipped", ...}.
[[nodiscard]] nlohmann::ordered_json clean_result_to_json(const CleanResult& result,
                                                          const CleanPlan& plan,
                                                          const CleanOptions& options);

/// "Would free 3.0 MiB in 2 items (run again with --yes to remove):" and the items, what
/// is kept (20 of them unless `verbose`) and why some could not be proven unused.
[[nodiscard]] std::string render_clean_plan(const CleanPlan& plan, bool verbose);
/// "Freed 3.0 MiB: removed 2 items, skipped 0", the items, what the re-check skipped and
/// where the audit log is.
[[nodiscard]] std::string render_clean_result(const CleanResult& result, const CleanPlan& plan,
                                              const CleanOptions& options);

}  // namespace headroom
