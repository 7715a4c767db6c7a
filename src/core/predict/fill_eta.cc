#include "core/predict/fill_eta.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>

namespace headroom {

namespace {

/// The step of thin()'s grid: the smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a
/// power of ten that cuts `span` into at most `cells` cells (so at least three quarters as
/// many as an exact split). The same span (a window that slides) gives the
/// same step, and so the same grid, from one call to the next.
double grid_step(double span, std::size_t cells) {
  const double wanted = span / static_cast<double>(cells);
  const double decade = std::pow(10.0, std::floor(std::log10(wanted)));
  for (const double factor : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0}) {
    if (factor * decade >= wanted) return factor * decade;
  }
  return 10 * decade;
}

/// floor(seconds / step): the cell of thin()'s grid a point is in. Truncated in an integer
/// where that is the same number (the usual case, seconds since a watch began): the lean
/// build would call libm's floor for each point of each fit.
[[gnu::always_inline]] inline double cell_of(double seconds, double step) {
  const double cells = seconds / step;
  if (cells >= 0 && cells < 0x1p62) return static_cast<double>(static_cast<std::int64_t>(cells));
  return std::floor(cells);
}

/// The points thin() keeps between the oldest and the newest (into `inner`, cleared).
void inner_points(std::span<const SeriesPoint> points, std::size_t max_points,
                  std::vector<SeriesPoint>& inner) {
  inner.clear();
  if (points.size() < 3) return;
  max_points = std::max<std::size_t>(max_points, 4);
  if (points.size() <= max_points) {
    inner.assign(points.begin() + 1, points.end() - 1);
    return;
  }
  const double span = points.back().seconds - points.front().seconds;
  const double step = grid_step(span, max_points - 3);
  if (!(step > 0) || !std::isfinite(step)) return;
  // The first point of each cell: it depends on itself and the point before it only.
  double cell = cell_of(points.front().seconds, step);
  for (std::size_t index = 1; index + 1 < points.size(); ++index) {
    const double here = cell_of(points[index].seconds, step);
    if (here > cell) inner.push_back(points[index]);
    cell = here;
  }
  // Rounding at a cell's edge can make one cell more than the span has room for.
  if (inner.size() > max_points - 2) {
    inner.erase(inner.begin(),
                inner.begin() + static_cast<std::ptrdiff_t>(inner.size() - (max_points - 2)));
  }
}

}  // namespace

std::vector<SeriesPoint> thin(std::span<const SeriesPoint> points, std::size_t max_points) {
  if (points.size() < 3) return {points.begin(), points.end()};
  std::vector<SeriesPoint> kept;
  inner_points(points, max_points, kept);
  kept.insert(kept.begin(), points.front());
  kept.push_back(points.back());
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

/// The slope of the line from `a` to the later `b`; nullopt at the same instant. Every
/// slope of a fit, cached or not, is computed here: the same operations give the same bits.
/// Always inlined: it is the inner loop of every fit, and the lean build optimizes for size.
[[gnu::always_inline]] inline std::optional<double> slope(const SeriesPoint& a,
                                                          const SeriesPoint& b) {
  const double dt = b.seconds - a.seconds;
  if (dt <= 0) return std::nullopt;
  return (b.remaining - a.remaining) / dt;
}

void count_signs(std::span<const double> values, std::size_t& negative, std::size_t& positive) {
  for (const double value : values) {
    negative += value < 0 ? 1 : 0;
    positive += value > 0 ? 1 : 0;
  }
}

PairSlopes pairwise_slopes(std::span<const SeriesPoint> points) {
  thread_local std::vector<double> buffer;
  PairSlopes result;
  const std::size_t n = points.size();
  if (n < 2) return result;
  buffer.resize(n * (n - 1) / 2);
  std::size_t count = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const auto value = slope(points[i], points[j]);
      if (!value) continue;
      buffer[count++] = *value;
      result.negative += *value < 0 ? std::size_t{1} : 0;
      result.positive += *value > 0 ? std::size_t{1} : 0;
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

/// Share of the pairs of `points` (the later one after the earlier) in which `remaining`
/// fell: the signs of pairwise_slopes(points), without keeping the slopes.
double falling_share(std::span<const SeriesPoint> points) {
  std::size_t pairs = 0;
  std::size_t falling = 0;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      const auto value = slope(points[i], points[j]);
      if (!value) continue;
      ++pairs;
      falling += *value < 0 ? std::size_t{1} : 0;
    }
  }
  return pairs == 0 ? 0 : static_cast<double>(falling) / static_cast<double>(pairs);
}

/// Appends the slopes of every pair of `points` in which at least one is marked
/// (`marked(index)`), in time order (the earlier point first), to `out`.
template <typename Marked>
void marked_slopes(std::span<const SeriesPoint> points, const Marked& marked,
                   std::vector<double>& out) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!marked(i)) continue;
    for (std::size_t j = 0; j < points.size(); ++j) {
      if (j == i || (j < i && marked(j))) continue;  // a pair of two marked: once
      const auto value = i < j ? slope(points[i], points[j]) : slope(points[j], points[i]);
      if (value) out.push_back(*value);
    }
  }
}

/// The k-th smallest (from 0) of the values of two sorted runs together.
double kth_of_two(std::span<const double> a, std::span<const double> b, std::size_t k) {
  // j values come from b and k + 1 - j from a: the least j at which b's next is not below
  // a's last taken.
  std::size_t low = k + 1 > a.size() ? k + 1 - a.size() : 0;
  std::size_t high = std::min(k + 1, b.size());
  while (low < high) {
    const std::size_t j = low + (high - low) / 2;
    if (b[j] < a[k - j]) {
      low = j + 1;
    } else {
      high = j;
    }
  }
  const std::size_t from_a = k + 1 - low;
  if (from_a == 0) return b[low - 1];
  if (low == 0) return a[from_a - 1];
  return std::max(a[from_a - 1], b[low - 1]);
}

}  // namespace

/// FitCache's slots, found and kept up to date by the fits.
struct FitCacheAccess {
  static constexpr std::size_t kSlots = 5;  ///< a series' fits: window, recent, before, stall
  /// More inner points in or out than this, and the slopes are computed anew.
  static constexpr std::size_t kMaxChange = 16;

  /// The slot holding the slopes among `inner`, reused, updated or rebuilt.
  static const FitCache::Slot& slot_for(FitCache& cache, std::span<const SeriesPoint> inner) {
    const std::uint64_t now = ++cache.clock_;
    FitCache::Slot* best = nullptr;
    std::size_t best_change = kMaxChange + 1;
    std::size_t best_start = 0;
    std::size_t best_run = 0;
    for (FitCache::Slot& slot : cache.slots_) {
      if (std::equal(slot.inner.begin(), slot.inner.end(), inner.begin(), inner.end())) {
        slot.used = now;
        ++cache.counters_.reused;
        return slot;
      }
      if (inner.empty()) continue;
      // The run the two share: the old inner points from the new first one on.
      const auto from = std::lower_bound(
          slot.inner.begin(), slot.inner.end(), inner.front().seconds,
          [](const SeriesPoint& point, double seconds) { return point.seconds < seconds; });
      const auto start = static_cast<std::size_t>(from - slot.inner.begin());
      std::size_t run = 0;
      while (start + run < slot.inner.size() && run < inner.size() &&
             slot.inner[start + run] == inner[run]) {
        ++run;
      }
      if (run == 0) continue;
      const std::size_t change = (slot.inner.size() - run) + (inner.size() - run);
      if (change < best_change) {
        best = &slot;
        best_change = change;
        best_start = start;
        best_run = run;
      }
    }
    if (best != nullptr && update(*best, inner, best_start, best_run)) {
      best->used = now;
      ++cache.counters_.updated;
      return *best;
    }
    FitCache::Slot* slot = nullptr;
    if (cache.slots_.size() < kSlots) {
      slot = &cache.slots_.emplace_back();
    } else {
      slot = &*std::min_element(
          cache.slots_.begin(), cache.slots_.end(),
          [](const FitCache::Slot& a, const FitCache::Slot& b) { return a.used < b.used; });
    }
    rebuild(*slot, inner);
    slot->used = now;
    ++cache.counters_.rebuilt;
    return *slot;
  }

  static void rebuild(FitCache::Slot& slot, std::span<const SeriesPoint> inner) {
    slot.inner.assign(inner.begin(), inner.end());
    const PairSlopes pairs = pairwise_slopes(inner);
    slot.sorted.assign(pairs.slopes.begin(), pairs.slopes.end());
    std::sort(slot.sorted.begin(), slot.sorted.end());
    slot.negative = pairs.negative;
    slot.positive = pairs.positive;
  }

  /// Takes out the slopes of the old points outside the shared run (`start`, `run`) and
  /// merges in those of the new points after it; false when a slope to take out is not
  /// there (never, as they are computed alike; then the caller computes them anew).
  static bool update(FitCache::Slot& slot, std::span<const SeriesPoint> inner, std::size_t start,
                     std::size_t run) {
    thread_local std::vector<double> gone;
    thread_local std::vector<double> added;
    thread_local std::vector<double> kept;
    gone.clear();
    added.clear();
    marked_slopes(
        slot.inner, [&](std::size_t index) { return index < start || index >= start + run; }, gone);
    marked_slopes(
        inner, [&](std::size_t index) { return index >= run; }, added);
    std::sort(gone.begin(), gone.end());
    std::sort(added.begin(), added.end());
    // The sorted slopes without `gone` (a value once for each time it is there), then with
    // `added` merged in: two passes, no sort.
    if (gone.size() > slot.sorted.size()) return false;
    kept.resize(slot.sorted.size());  // room for all: a slope not found stays in
    const auto kept_end = std::set_difference(slot.sorted.begin(), slot.sorted.end(), gone.begin(),
                                              gone.end(), kept.begin());
    if (kept_end != kept.begin() + static_cast<std::ptrdiff_t>(slot.sorted.size() - gone.size())) {
      return false;
    }
    kept.erase(kept_end, kept.end());
    slot.sorted.resize(kept.size() + added.size());
    std::merge(kept.begin(), kept.end(), added.begin(), added.end(), slot.sorted.begin());
    std::size_t negative = 0;
    std::size_t positive = 0;
    count_signs(gone, negative, positive);
    slot.negative -= negative;
    slot.positive -= positive;
    count_signs(added, slot.negative, slot.positive);
    slot.inner.assign(inner.begin(), inner.end());
    return true;
  }
};

namespace {

/// What a fit needs of the pairwise slopes of its points.
struct SlopeSummary {
  std::size_t count = 0;
  std::size_t negative = 0;
  std::size_t positive = 0;
  double median = 0;
};

/// The slopes of the points `first`, `inner`..., `last`, all computed.
SlopeSummary all_slopes(const SeriesPoint& first, std::span<const SeriesPoint> inner,
                        const SeriesPoint& last) {
  thread_local std::vector<SeriesPoint> used;
  used.clear();
  used.push_back(first);
  used.insert(used.end(), inner.begin(), inner.end());
  used.push_back(last);
  PairSlopes pairs = pairwise_slopes(used);
  SlopeSummary summary{pairs.slopes.size(), pairs.negative, pairs.positive, 0};
  if (!pairs.slopes.empty()) summary.median = median(pairs.slopes);
  return summary;
}

/// The same, from the cached slopes among `inner` and those of the two ends.
SlopeSummary cached_slopes(FitCache& cache, const SeriesPoint& first,
                           std::span<const SeriesPoint> inner, const SeriesPoint& last) {
  const FitCache::Slot& slot = FitCacheAccess::slot_for(cache, inner);
  thread_local std::vector<double> ends;
  ends.clear();
  for (const SeriesPoint& point : inner) {
    if (const auto value = slope(first, point)) ends.push_back(*value);
  }
  for (const SeriesPoint& point : inner) {
    if (const auto value = slope(point, last)) ends.push_back(*value);
  }
  if (const auto value = slope(first, last)) ends.push_back(*value);
  std::sort(ends.begin(), ends.end());
  SlopeSummary summary{slot.sorted.size() + ends.size(), slot.negative, slot.positive, 0};
  count_signs(ends, summary.negative, summary.positive);
  if (summary.count == 0) return summary;
  const std::size_t middle = summary.count / 2;
  const double upper = kth_of_two(slot.sorted, ends, middle);
  summary.median =
      summary.count % 2 == 1 ? upper : (kth_of_two(slot.sorted, ends, middle - 1) + upper) / 2;
  return summary;
}

/// The estimate over `points`, and the share of all pairs that are falling.
struct Fit {
  FillEstimate estimate;
  double falling = 0;
};

Fit fit(std::span<const SeriesPoint> points, const FillOptions& options, FitCache* cache) {
  Fit result;
  FillEstimate& estimate = result.estimate;
  if (points.empty()) return result;
  thread_local std::vector<SeriesPoint> inner;
  inner_points(points, options.max_points, inner);
  const std::size_t used = points.size() == 1 ? 1 : inner.size() + 2;
  estimate.samples = used;
  estimate.span_seconds = points.back().seconds - points.front().seconds;
  if (used < std::max<std::size_t>(options.min_samples, 2)) return result;
  // The common case of a disk nobody writes: every slope would be 0.
  const double level = points.front().remaining;
  const bool flat = points.back().remaining == level &&
                    std::all_of(inner.begin(), inner.end(),
                                [&](const SeriesPoint& point) { return point.remaining == level; });
  if (flat) {
    estimate.rate = 0.0;
    estimate.agreement = 0.0;
    return result;
  }
  // Sorting (the cache) needs numbers that compare: a NaN is fitted the plain way.
  const auto finite = [](const SeriesPoint& point) {
    return std::isfinite(point.seconds) && std::isfinite(point.remaining);
  };
  const bool cacheable = cache != nullptr && finite(points.front()) && finite(points.back()) &&
                         std::all_of(inner.begin(), inner.end(), finite);
  const SlopeSummary pairs = cacheable ? cached_slopes(*cache, points.front(), inner, points.back())
                                       : all_slopes(points.front(), inner, points.back());
  if (pairs.count == 0) return result;
  const std::size_t moving = pairs.negative + pairs.positive;
  estimate.agreement =
      moving == 0 ? 0.0 : static_cast<double>(pairs.negative) / static_cast<double>(moving);
  result.falling = static_cast<double>(pairs.negative) / static_cast<double>(pairs.count);
  const double slope = pairs.median;
  estimate.rate = slope;
  if (slope >= 0 || estimate.agreement < options.min_agreement) return result;
  const double remaining = std::max(0.0, points.back().remaining);
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
                      FitCache* cache, FillEstimate& estimate) {
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
  const FillEstimate then = fit(points.first(last_fall + 1), options, cache).estimate;
  const double rate = then.rate && *then.rate < 0 ? *then.rate : *estimate.rate;
  const double eta_then = std::max(0.0, points[last_fall].remaining) / -rate;
  if (since < options.stall_fraction * eta_then) return;
  estimate.eta_seconds.reset();
  estimate.rate = 0.0;
  estimate.stalled = true;
}

FillEstimate trend(std::span<const SeriesPoint> points, const FillOptions& options,
                   FitCache* cache);

}  // namespace

FillEstimate fill_eta(std::span<const SeriesPoint> points, const FillOptions& options,
                      FitCache* cache) {
  const std::size_t start = after_last_jump(points, options.jump_fraction);
  FillEstimate estimate = trend(points.subspan(start), options, cache);
  estimate.restarted = start > 0;
  clear_if_stalled(points.subspan(start), options, cache, estimate);
  return estimate;
}

namespace {

/// The whole window's estimate, or the recent span's when the rate changed.
FillEstimate trend(std::span<const SeriesPoint> points, const FillOptions& options,
                   FitCache* cache) {
  FillEstimate whole = fit(points, options, cache).estimate;
  if (options.recent_seconds <= 0) return whole;
  // Split at the start of the recent span: the head and the tail share that point.
  const std::size_t split = tail_start(points, options.recent_seconds);
  if (split + 1 < std::max<std::size_t>(options.min_samples, 2)) return whole;
  const std::span<const SeriesPoint> tail = points.subspan(split);
  Fit recent = fit(tail, options, cache);
  if (!recent.estimate.eta_seconds || recent.falling < options.recent_falling) return whole;
  // And it fell from the start of the span: a write burst shorter than the span
  // (a checkpoint being saved) is flat in the span's first third.
  const auto first_third =
      std::partition_point(tail.begin(), tail.end(), [&](const SeriesPoint& point) {
        return point.seconds <= tail.front().seconds + options.recent_seconds / 3;
      });
  const auto opening = tail.first(static_cast<std::size_t>(first_third - tail.begin()));
  if (falling_share(opening) < options.min_agreement) return whole;
  // The rate changed when the tail falls clearly faster than what came before it
  // (flat, or slower); otherwise the whole window is the steadier view.
  const FillEstimate before = fit(points.first(split + 1), options, cache).estimate;
  if (before.eta_seconds && *recent.estimate.rate > *before.rate * options.recent_factor) {
    return whole;
  }
  recent.estimate.recent = true;
  return recent.estimate;
}

}  // namespace

}  // namespace headroom
