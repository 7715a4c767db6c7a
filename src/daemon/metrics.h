#pragma once
// The Prometheus view of a watch step: pure conversion of a snapshot to metric
// families (so it is unit-testable and golden-testable without a socket), and
// the collector that prometheus-cpp's Exposer calls on every scrape. Names and
// units: docs/metrics.md.

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/alerts/watcher.h"

namespace headroom::daemon {

/// Delivery counters of one sink at scrape time.
struct SinkStats {
  std::string sink;    ///< "webhook#1": kind and place, never the URL (it holds secrets)
  std::string target;  ///< where it delivers, without secrets: "https://host:port", a file
  std::uint64_t sent = 0;
  std::uint64_t failed = 0;
  std::uint64_t dropped = 0;
};

/// What one scrape shows: the newest step and the daemon's own counters.
struct Snapshot {
  WatchStep step;
  std::map<std::string, ActiveAlert> active;  ///< alerts firing after this step
  std::uint64_t samples_total = 0;
  double sample_duration_seconds = 0;
  std::vector<SinkStats> sinks;
  double config_last_reload_success = 1;
  /// When the step was taken, and the newest step with every path measured (none on a
  /// hung mount): their ages are computed at scrape time, so a frozen loop shows.
  std::chrono::steady_clock::time_point taken;
  std::optional<std::chrono::steady_clock::time_point> last_complete;
};

/// Converts a snapshot to metric families (names: docs/metrics.md).
[[nodiscard]] std::vector<prometheus::MetricFamily> to_metric_families(const Snapshot& snapshot);

/// The collector: one immutable snapshot, swapped under a mutex by the watch loop.
class SnapshotCollector final : public prometheus::Collectable {
 public:
  void publish(std::shared_ptr<const Snapshot> snapshot);
  [[nodiscard]] std::vector<prometheus::MetricFamily> Collect() const override;
  /// Called at scrape time to refresh sink counters (they change between samples).
  void set_sink_stats(std::function<std::vector<SinkStats>()> read);

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::function<std::vector<SinkStats>()> read_sink_stats_;
};

}  // namespace headroom::daemon
