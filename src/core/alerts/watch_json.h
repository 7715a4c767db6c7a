#pragma once
// JSON forms of a watch step: the sample, its predictions and alert events
// (schema: docs/json.md, "headroom watch --once --json"; the JSON-lines and
// webhook sinks send to_json(AlertEvent)).

#include <nlohmann/json.hpp>

#include "core/alerts/rules.h"
#include "core/alerts/watcher.h"

namespace headroom {

/// RFC 3339 UTC with milliseconds, e.g. "2024-05-01T12:00:00.250Z".
[[nodiscard]] std::string rfc3339(std::chrono::system_clock::time_point time);
/// {"fill_rate_bytes_per_second" (positive: filling, as the metric), "eta_seconds", "samples",
/// "span_seconds", "agreement", "recent"}.
[[nodiscard]] nlohmann::ordered_json to_json(const FillEstimate& estimate);
/// {"kind", "rule", "subject", "severity", "summary", "value", "threshold", "time", "started",
/// "labels"}, and "host", "id", "action" when set.
[[nodiscard]] nlohmann::ordered_json to_json(const AlertEvent& event);
/// {"time", "filesystems": [...with "prediction"], "memory", "pressure", "cgroup", "oom_kills",
///  "fds", "shm_stale_bytes", "probes", "alerts": [...]} .
[[nodiscard]] nlohmann::ordered_json to_json(const WatchStep& step);

}  // namespace headroom
