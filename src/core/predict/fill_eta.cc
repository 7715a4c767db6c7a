#include "core/predict/fill_eta.h"

#include <algorithm>
#include <cmath>

namespace headroom {

std::vector<SeriesPoint> thin(std::span<const SeriesPoint> points, std::size_t max_points) {
  if (max_points < 2 || points.size() <= max_points) {
    return {points.begin(), points.end()};
  }
  // Pick indices evenly from the newest backwards so the newest point is kept.
  std::vector<SeriesPoint> kept;
  kept.reserve(max_points);
  const double step = static_cast<double>(points.size() - 1) / static_cast<double>(max_points - 1);
  for (std::size_t i = 0; i < max_points; ++i) {
    const double back = step * static_cast<double>(max_points - 1 - i);
    const auto index = points.size() - 1 - static_cast<std::size_t>(std::llround(back));
    kept.push_back(points[index]);
  }
  return kept;
}

namespace {

/// The slopes between every two points of a fit, in a buffer each thread reuses: a watch
/// fits every series once a second, up to four times (64 points: 2,016 slopes each), and
/// allocating the buffer each time was a tenth of its CPU.
struct PairSlopes {
  std::span<double> slopes;
  std::size_t negative = 0;
  std::size_t positive = 0;
};

PairSlopes pairwise_slopes(std::span<const SeriesPoint> points) {
  thread_local std::vector<double> buffer;
  PairSlopes result;
  const std::size_t n = points.size();
  if (n < 2) return result;
  buffer.resize(n * (n - 1) / 2);
  std::size_t count = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const double t0 = points[i].seconds;
    const double r0 = points[i].remaining;
    for (std::size_t j = i + 1; j < n; ++j) {
      const double dt = points[j].seconds - t0;
      if (dt <= 0) continue;  // same instant: no slope
      const double slope = (points[j].remaining - r0) / dt;
      buffer[count++] = slope;
      result.negative += slope < 0 ? 1 : 0;
      result.positive += slope > 0 ? 1 : 0;
    }
  }
  result.slopes = std::span<double>(buffer.data(), count);
  return result;
}

double median(std::span<double> values) {
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle),
                   values.end());
  const double upper = values[middle];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
  return (lower + upper) / 2;
}

/// Share of the pairs of points in which `remaining` fell.
double falling_share(const PairSlopes& pairs) {
  return pairs.slopes.empty()
             ? 0
             : static_cast<double>(pairs.negative) / static_cast<double>(pairs.slopes.size());
}

/// The estimate over `points`, and the share of all pairs that are falling.
struct Fit {
  FillEstimate estimate;
  double falling = 0;
};

Fit fit(std::span<const SeriesPoint> points, const FillOptions& options) {
  Fit result;
  FillEstimate& estimate = result.estimate;
  const std::vector<SeriesPoint> used = thin(points, options.max_points);
  estimate.samples = used.size();
  if (used.empty()) return result;
  estimate.span_seconds = used.back().seconds - used.front().seconds;
  if (used.size() < std::max<std::size_t>(options.min_samples, 2)) return result;
  // The common case of a disk nobody writes: every slope would be 0.
  const bool flat = std::all_of(used.begin(), used.end(), [&](const SeriesPoint& point) {
    return point.remaining == used.front().remaining;
  });
  if (flat) {
    estimate.rate = 0.0;
    estimate.agreement = 0.0;
    return result;
  }
  PairSlopes pairs = pairwise_slopes(used);
  if (pairs.slopes.empty()) return result;
  const std::size_t moving = pairs.negative + pairs.positive;
  estimate.agreement =
      moving == 0 ? 0.0 : static_cast<double>(pairs.negative) / static_cast<double>(moving);
  result.falling = falling_share(pairs);
  const double slope = median(pairs.slopes);
  estimate.rate = slope;
  if (slope >= 0 || estimate.agreement < options.min_agreement) return result;
  const double remaining = std::max(0.0, used.back().remaining);
  estimate.eta_seconds = remaining / -slope;
  return result;
}

/// Index of the first of the newest points covering at least `seconds` (the
/// newest point at or before that far back); 0 when the series is not longer.
std::size_t tail_start(std::span<const SeriesPoint> points, double seconds) {
  if (points.empty()) return 0;
  const double start = points.back().seconds - seconds;
  const auto after = std::upper_bound(
      points.begin(), points.end(), start,
      [](double value, const SeriesPoint& point) { return value < point.seconds; });
  if (after == points.begin()) return 0;
  return static_cast<std::size_t>(after - points.begin()) - 1;
}

}  // namespace

std::optional<double> theil_sen_slope(std::span<const SeriesPoint> points) {
  if (points.size() < 2) return std::nullopt;
  PairSlopes pairs = pairwise_slopes(points);
  if (pairs.slopes.empty()) return std::nullopt;
  return median(pairs.slopes);
}

namespace {

/// Index of the point just after the newest rise that freed a large share of the range
/// of the points before it (FillOptions::jump_fraction); 0 when there is none.
std::size_t after_last_jump(std::span<const SeriesPoint> points, double fraction) {
  if (fraction <= 0 || points.size() < 2) return 0;
  // Running range of the points before each one, oldest first.
  double low = points.front().remaining;
  double high = low;
  std::size_t start = 0;
  for (std::size_t index = 1; index < points.size(); ++index) {
    // After a fall (the previous point is below the highest): a series that only
    // rises (a disk being emptied file by file) is a trend, not a jump.
    const double previous = points[index - 1].remaining;
    const double rise = points[index].remaining - previous;
    if (rise > 0 && previous < high && rise > fraction * (high - low)) {
      start = index;
      low = high = points[index].remaining;
      continue;
    }
    low = std::min(low, points[index].remaining);
    high = std::max(high, points[index].remaining);
  }
  return start;
}

/// Clears the ETA of an estimate whose writes stopped (FillOptions::stall_fraction).
void clear_if_stalled(std::span<const SeriesPoint> points, const FillOptions& options,
                      FillEstimate& estimate) {
  if (options.stall_fraction <= 0 || !estimate.eta_seconds || !estimate.rate) return;
  if (points.back().remaining <= 0) return;  // full: "0s" is not stale
  std::size_t last_fall = points.size();
  for (std::size_t index = points.size() - 1; index > 0; --index) {
    if (points[index].remaining < points[index - 1].remaining) {
      last_fall = index;
      break;
    }
  }
  if (last_fall >= points.size() - 1) return;  // still falling at the newest point
  const double since = points.back().seconds - points[last_fall].seconds;
  // The trend as it was when the writes stopped: the window's own rate decays as flat
  // points pile up, and measured against it the stall would end again by itself.
  const FillEstimate then = fit(points.first(last_fall + 1), options).estimate;
  const double rate = then.rate && *then.rate < 0 ? *then.rate : *estimate.rate;
  const double eta_then = std::max(0.0, points[last_fall].remaining) / -rate;
  if (since < options.stall_fraction * eta_then) return;
  estimate.eta_seconds.reset();
  estimate.rate = 0.0;
  estimate.stalled = true;
}

FillEstimate trend(std::span<const SeriesPoint> points, const FillOptions& options);

}  // namespace

FillEstimate fill_eta(std::span<const SeriesPoint> points, const FillOptions& options) {
  const std::size_t start = after_last_jump(points, options.jump_fraction);
  FillEstimate estimate = trend(points.subspan(start), options);
  estimate.restarted = start > 0;
  clear_if_stalled(points.subspan(start), options, estimate);
  return estimate;
}

namespace {

/// The whole window's estimate, or the recent span's when the rate changed.
FillEstimate trend(std::span<const SeriesPoint> points, const FillOptions& options) {
  FillEstimate whole = fit(points, options).estimate;
  if (options.recent_seconds <= 0) return whole;
  // Split at the start of the recent span: the head and the tail share that point.
  const std::size_t split = tail_start(points, options.recent_seconds);
  if (split + 1 < std::max<std::size_t>(options.min_samples, 2)) return whole;
  const std::span<const SeriesPoint> tail = points.subspan(split);
  Fit recent = fit(tail, options);
  if (!recent.estimate.eta_seconds || recent.falling < options.recent_falling) return whole;
  // And it fell from the start of the span: a write burst shorter than the span
  // (a checkpoint being saved) is flat in the span's first third.
  const auto first_third =
      std::partition_point(tail.begin(), tail.end(), [&](const SeriesPoint& point) {
        return point.seconds <= tail.front().seconds + options.recent_seconds / 3;
      });
  const auto opening = tail.first(static_cast<std::size_t>(first_third - tail.begin()));
  if (falling_share(pairwise_slopes(opening)) < options.min_agreement) return whole;
  // The rate changed when the tail falls clearly faster than what came before it
  // (flat, or slower); otherwise the whole window is the steadier view.
  const FillEstimate before = fit(points.first(split + 1), options).estimate;
  if (before.eta_seconds && *recent.estimate.rate > *before.rate * options.recent_factor) {
    return whole;
  }
  recent.estimate.recent = true;
  return recent.estimate;
}

}  // namespace

}  // namespace headroom
