#pragma once
// How watch shows a step (a sample, its predictions and alert events): the JSON forms
// (schema: docs/json.md, "headroom watch --once --json"; the JSON-lines and webhook sinks
// send to_json(AlertEvent)), the block `--once` prints, and the live view a terminal gets,
// redrawn in place every sample as watch(1) and top do.

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/alerts/rules.h"
#include "core/alerts/watcher.h"
#include "core/report/style.h"

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

/// One sample as text: the filesystems first (what fills up), then memory,
/// pressure, the cgroup, file handles, stale /dev/shm and failed probes.
[[nodiscard]] std::string render_watch_text(const WatchStep& step);

/// The terminal view of a running watch: each frame clears the screen and
/// draws a header, the sample and the alerts firing now (kept from the events).
class LiveView {
 public:
  LiveView(TextStyle style, std::chrono::milliseconds interval, std::chrono::milliseconds window)
      : style_(style), interval_(interval), window_(window) {}

  /// The escape sequences and text of the frame for `step`; updates the
  /// alerts firing from its events first.
  [[nodiscard]] std::string frame(const WatchStep& step);

 private:
  TextStyle style_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds window_;
  std::map<std::string, AlertEvent> firing_;  ///< by AlertEvent::key()
};

}  // namespace headroom
