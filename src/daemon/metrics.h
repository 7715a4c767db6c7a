#pragma once
// The Prometheus view of a watch step: pure conversion of a snapshot to metric
// families (so it is unit-testable and golden-testable without a socket), and
// the collector that renders them to text once per sample and serves that text
// to every scrape. Names and units: docs/metrics.md.

#include <prometheus/metric_family.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/alerts/watcher.h"
#include "daemon/sink_worker.h"

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

/// A sink whose delivery counters each scrape reads as they are then.
struct LiveSink {
  std::string sink;    ///< as SinkStats::sink
  std::string target;  ///< as SinkStats::target
  std::shared_ptr<const SinkCounters> counters;
};

/// The collector: the text of one immutable snapshot, rendered when the watch loop
/// publishes it and swapped under a mutex; a scrape copies a pointer to it and
/// adds the few lines that change between samples.
class SnapshotCollector {
 public:
  /// Renders `snapshot` (the Prometheus text format, the series prometheus-cpp's
  /// TextSerializer writes, without iostreams), on the caller's thread: the
  /// watch loop's, once per sample, whatever the number of scrapes.
  void publish(std::shared_ptr<const Snapshot> snapshot);
  /// The sinks whose counters each scrape shows (the watch loop's, set again on reload).
  void set_sinks(std::vector<LiveSink> sinks);
  /// The /metrics page at `now`, in two parts: the text rendered at the last publish
  /// (null before the first: an empty page), returned, and the lines computed at
  /// scrape time (the sample's age, the sinks' counters), written to `tail` (cleared
  /// first). Allocates nothing once `tail` has grown to their size.
  [[nodiscard]] std::shared_ptr<const std::string> page(std::chrono::steady_clock::time_point now,
                                                        std::string& tail) const;
  /// The whole page at `now` as one string (for tests).
  [[nodiscard]] std::string text(std::chrono::steady_clock::time_point now) const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::shared_ptr<const std::string> rendered_;
  std::shared_ptr<const std::vector<LiveSink>> sinks_;
};

}  // namespace headroom::daemon
