#pragma once
// Time-to-full as a pure function of a series of (time, remaining) points.
//
// Why Theil-Sen: the slope is the median of the slopes between every pair of
// points, so a checkpoint burst, a log rotation or one noisy sample moves it
// little (breakdown point ~29%), where a least-squares fit or the first/last
// difference that node_exporter users feed to predict_linear() jumps. The
// window is short (minutes, not the 1-6 h of server rules) so a training run's
// growth is seen while there is still time to act.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace headroom {

/// One observation: seconds on a monotonic clock, and what is left (bytes).
struct SeriesPoint {
  double seconds = 0;
  double remaining = 0;
  bool operator==(const SeriesPoint&) const = default;
};

/// Tuning of the estimate; the defaults are what `watch` uses.
struct FillOptions {
  /// Points needed before any estimate is published ("a few samples show a trend").
  std::size_t min_samples = 4;
  /// At most this many points enter the O(n^2) pairwise median; longer series
  /// are thinned on a fixed grid of time (thin(): the oldest and newest points,
  /// and the first point of each grid cell between them). 64 points (2,016 slopes)
  /// span a 10-minute window every ~10 s: still robust to a burst (Theil-Sen
  /// ignores up to 29% outliers).
  std::size_t max_points = 64;
  /// Share of the pairwise slopes that must be negative (among non-zero ones):
  /// below it the series is noise around a level, and no ETA is published.
  double min_agreement = 0.6;
  /// When > 0, the newest `recent_seconds` are also estimated on their own, and
  /// that estimate wins when the rate has changed: space shrinks between at
  /// least `recent_falling` of its pairs of points and between at least
  /// `min_agreement` of the pairs in its first third (a trend over the whole
  /// span: a checkpoint write shorter than it is flat at its start), and at
  /// least `recent_factor` times faster than the points before it. Without it
  /// a disk idle for most of the window and filling fast now shows no trend
  /// (most pairs are flat) until it is nearly full. `watch` sets this to
  /// `eta_min_span`.
  double recent_seconds = 0;
  double recent_falling = 0.9;
  double recent_factor = 1.5;
  /// Space freed at once (a rise between two points of more than this share of the
  /// range the points before it spanned: a disk emptied, old checkpoints deleted) starts
  /// the series over from the rise: the points before it describe a disk that no longer
  /// exists, and their slopes would keep an ETA of minutes on an empty disk. 0: off.
  double jump_fraction = 0.5;
  /// The writes stopped: when nothing was consumed since the last fall for at least
  /// this share of the time-to-full predicted then, the trend is contradicted (at 1:
  /// the disk would be full by now), and no ETA is published ("full in 5s" must not
  /// stay for minutes). A pause shorter than the ETA (a writer between checkpoints)
  /// keeps it, and so does a full disk (nothing left is not a stale "full in 0s"). 0: off.
  double stall_fraction = 1.0;
};

/// The estimate for one series.
struct FillEstimate {
  std::size_t samples = 0;  ///< points used
  double span_seconds = 0;  ///< time covered by them
  std::optional<double>
      rate;  ///< remaining per second (negative: filling); nullopt: too few points
  /// Seconds until `remaining` reaches 0 at `rate`; nullopt when not filling
  /// (rate >= 0), too few points or no agreement on the trend.
  std::optional<double> eta_seconds;
  double agreement = 0;  ///< share of non-zero pairwise slopes that are negative
  /// The estimate is from the newest `FillOptions::recent_seconds` only: the disk
  /// (or memory) fills faster now than over the window.
  bool recent = false;
  /// The writes stopped (FillOptions::stall_fraction): `rate` is 0 and there is no ETA.
  bool stalled = false;
  /// The series restarted after space was freed at once (FillOptions::jump_fraction).
  bool restarted = false;
};

/// What the exported forms say (watch --json `fill_rate_bytes_per_second` and the
/// `headroom_filesystem_fill_rate_bytes_per_second` metric): bytes consumed per
/// second, positive = filling, negative = freeing (-rate); nullopt as `rate`.
[[nodiscard]] inline std::optional<double> fill_rate(const FillEstimate& estimate) {
  if (!estimate.rate) return std::nullopt;
  return 0.0 - *estimate.rate;  // 0.0 - x: never -0.0 for a flat series
}

/// What the fits of one series keep between calls, so that a series that grew by a
/// point (a watch samples every second) is not fitted from scratch: the sorted slopes
/// between the points of each fit other than its oldest and newest. Those inner
/// points are the same from one call to the next (thin() keeps points on a grid
/// of time), so only the slopes of the two end points are new, and the slopes of
/// the grid points that entered or left are merged in or taken out. The estimate
/// is exactly the one without the cache (the same slopes, the same median).
class FitCache {
 public:
  /// How the fits were served, for tests: from slopes kept as they were, kept and
  /// updated (points entered or left), or computed anew.
  struct Counters {
    std::size_t reused = 0;
    std::size_t updated = 0;
    std::size_t rebuilt = 0;
  };
  [[nodiscard]] const Counters& counters() const { return counters_; }

  /// The sorted slopes among one fit's inner points.
  struct Slot {
    std::vector<SeriesPoint> inner;
    std::vector<double> sorted;
    std::size_t negative = 0;
    std::size_t positive = 0;
    std::uint64_t used = 0;  ///< when last used (a count of lookups): the oldest is replaced
  };

 private:
  friend struct FitCacheAccess;
  std::vector<Slot> slots_;
  std::uint64_t clock_ = 0;
  Counters counters_;
};

/// The Theil-Sen slope (median of pairwise slopes) of `points`, which must be
/// in time order; nullopt for fewer than 2 points or no time spread.
[[nodiscard]] std::optional<double> theil_sen_slope(std::span<const SeriesPoint> points);

/// Time-to-empty of `remaining` (bytes of a filesystem, MemAvailable, ...)
/// from the points in time order. The ETA counts from the newest point and
/// uses its value (what is left now), not the fitted line's.
/// `cache`, when given, keeps the slopes of this series' fits for its next call
/// (the same series, grown or slid by a few points); the estimate is the same.
[[nodiscard]] FillEstimate fill_eta(std::span<const SeriesPoint> points,
                                    const FillOptions& options = {}, FitCache* cache = nullptr);

/// Thins `points` to at most `max_points` (at least 4): the oldest and the newest
/// point, and between them the first point of each cell of a grid of time whose
/// step is the smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten that
/// keeps the count within `max_points`. A point kept stays kept while it and the one before it are
/// in the series, so a sliding window's fits share their inner points.
[[nodiscard]] std::vector<SeriesPoint> thin(std::span<const SeriesPoint> points,
                                            std::size_t max_points);

}  // namespace headroom
