#pragma once
// The human forms of watch's samples: the block `--once` prints, and the live
// view a terminal gets, redrawn in place every sample as watch(1) and top do.

#include <chrono>
#include <map>
#include <string>

#include "core/alerts/watcher.h"
#include "core/report/style.h"

namespace headroom::cli {

/// One sample as text: the filesystems first (what fills up), then memory,
/// pressure, the cgroup, file handles, stale /dev/shm and failed probes.
[[nodiscard]] std::string render_step(const WatchStep& step);

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

}  // namespace headroom::cli
