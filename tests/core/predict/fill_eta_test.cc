#include "core/predict/fill_eta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace headroom {
namespace {

/// remaining(t) = start - rate * t, sampled every `step` seconds.
std::vector<SeriesPoint> line(double start, double rate, int count, double step = 1.0) {
  std::vector<SeriesPoint> points;
  for (int i = 0; i < count; ++i) {
    points.push_back({i * step, start - rate * i * step});
  }
  return points;
}

TEST(FillEta, SteadyFillGivesExactEta) {
  const auto points = line(1000, 10, 20);  // 810 left at t=19, 10/s
  const FillEstimate estimate = fill_eta(points);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_DOUBLE_EQ(*estimate.rate, -10);
  EXPECT_NEAR(*estimate.eta_seconds, 81.0, 1e-9);
  EXPECT_EQ(estimate.samples, 20u);
  EXPECT_DOUBLE_EQ(estimate.span_seconds, 19);
}

TEST(FillEta, NeedsMinimumSamples) {
  FillOptions options;
  options.min_samples = 4;
  EXPECT_FALSE(fill_eta(line(1000, 10, 3), options).eta_seconds);
  EXPECT_FALSE(fill_eta(line(1000, 10, 3), options).rate);
  EXPECT_TRUE(fill_eta(line(1000, 10, 4), options).eta_seconds);
  EXPECT_FALSE(fill_eta(std::vector<SeriesPoint>{}).eta_seconds);
}

TEST(FillEta, FlatOrFreeingHasNoEta) {
  EXPECT_FALSE(fill_eta(line(1000, 0, 20)).eta_seconds);
  const FillEstimate freeing = fill_eta(line(1000, -5, 20));
  EXPECT_FALSE(freeing.eta_seconds);
  ASSERT_TRUE(freeing.rate);
  EXPECT_GT(*freeing.rate, 0);
}

TEST(FillEta, OneOutlierBarelyMovesIt) {
  auto points = line(10000, 10, 30);
  points[15].remaining -= 5000;  // a burst that was deleted right after
  const FillEstimate estimate = fill_eta(points);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_NEAR(*estimate.rate, -10, 0.5);
}

TEST(FillEta, BurstyWritesGiveTheAverageRate) {
  // 50 bytes every 5 s (checkpoint-like), sampled every second: 10 B/s on average.
  std::vector<SeriesPoint> points;
  for (int i = 0; i < 60; ++i) points.push_back({double(i), 10000.0 - 50.0 * (i / 5)});
  const FillEstimate estimate = fill_eta(points);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_NEAR(-*estimate.rate, 10, 1.5);
  const double truth = points.back().remaining / 10;
  EXPECT_NEAR(*estimate.eta_seconds, truth, truth * 0.15);
}

TEST(FillEta, NoiseAroundALevelPublishesNoEtaOrAFarOne) {
  std::mt19937 random(42);
  std::normal_distribution<double> noise(0, 1000);
  std::vector<SeriesPoint> points;
  for (int i = 0; i < 100; ++i) points.push_back({double(i), 1e9 + noise(random)});
  const FillEstimate estimate = fill_eta(points);
  if (estimate.eta_seconds) {
    EXPECT_GT(*estimate.eta_seconds, 1e5);
  }
  EXPECT_LT(estimate.agreement, 0.6);
}

TEST(FillEta, NoisySteadyFillStaysWithinTenPercent) {
  std::mt19937 random(7);
  std::normal_distribution<double> noise(0, 20);
  std::vector<SeriesPoint> points;
  for (int i = 0; i < 50; ++i) points.push_back({i * 0.2, 5000 - 100 * i * 0.2 + noise(random)});
  const FillEstimate estimate = fill_eta(points);
  ASSERT_TRUE(estimate.eta_seconds);
  const double truth = points.back().remaining / 100;
  EXPECT_NEAR(*estimate.eta_seconds, truth, truth * 0.1);
}

TEST(FillEta, FullDiskHasZeroEta) {
  auto points = line(100, 10, 10);
  points.push_back({10, 0});
  points.push_back({11, 0});
  const FillEstimate estimate = fill_eta(points);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_DOUBLE_EQ(*estimate.eta_seconds, 0);
}

TEST(TheilSenSlope, MedianOfPairwiseSlopes) {
  const std::vector<SeriesPoint> points = {{0, 0}, {1, 1}, {2, 2}, {3, 100}};
  // slopes: 1,1,33.3,1,49.5,98 -> median of {1,1,1,33.3,49.5,98} = (1+33.3)/2
  EXPECT_NEAR(*theil_sen_slope(points), (1 + 100.0 / 3) / 2, 1e-9);
  EXPECT_FALSE(theil_sen_slope(std::vector<SeriesPoint>{{0, 1}}));
  EXPECT_FALSE(theil_sen_slope(std::vector<SeriesPoint>{{1, 1}, {1, 2}}));
}

TEST(Thin, KeepsNewestAndBound) {
  const auto points = line(1000, 1, 1000);
  for (const std::size_t max_points : {4u, 5u, 10u, 64u, 100u, 999u}) {
    const auto kept = thin(points, max_points);
    ASSERT_LE(kept.size(), max_points);
    // Evenly: the grid's step is at most 4/3 of what an exact split would give.
    EXPECT_GE(kept.size() * 4, (max_points - 3) * 3) << max_points;
    EXPECT_DOUBLE_EQ(kept.back().seconds, points.back().seconds);
    EXPECT_DOUBLE_EQ(kept.front().seconds, points.front().seconds);
    for (std::size_t i = 1; i < kept.size(); ++i) EXPECT_LT(kept[i - 1].seconds, kept[i].seconds);
  }
  EXPECT_EQ(thin(points, 2000).size(), 1000u);
}

TEST(Thin, AWindowThatSlidesKeepsItsInnerPoints) {
  // A 10-minute window at 1 Hz, a second later: the same points are kept between the ends
  // (bar the one cell that left and the one that came), which is what lets a fit reuse
  // the slopes among them.
  const auto series = line(1e9, 1000, 700);
  const std::span<const SeriesPoint> all(series);
  const auto before = thin(all.subspan(40, 601), 64);
  const auto after = thin(all.subspan(41, 601), 64);
  std::size_t shared = 0;
  for (std::size_t i = 1; i + 1 < after.size(); ++i) {
    if (std::find(before.begin() + 1, before.end() - 1, after[i]) != before.end() - 1) ++shared;
  }
  EXPECT_GE(shared + 2, after.size() - 2) << "of " << after.size();
  EXPECT_GE(after.size(), 50u);
}

TEST(FillEta, LongSeriesIsThinnedButStillRight) {
  const FillEstimate estimate = fill_eta(line(1e6, 100, 5000, 0.1));
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_LE(estimate.samples, FillOptions{}.max_points);
  EXPECT_NEAR(*estimate.rate, -100, 1e-6);
}

/// A 10-minute window sampled every 5 s, ending at `now`: `remaining(t)` for
/// each sample time t (seconds, may be negative before the series' origin).
template <typename Remaining>
std::vector<SeriesPoint> window(double now, Remaining remaining) {
  std::vector<SeriesPoint> points;
  for (double t = now - 600; t <= now; t += 5) points.push_back({t, remaining(t)});
  return points;
}

FillOptions recent_options() {
  FillOptions options;
  options.recent_seconds = 150;  // watch's eta_min_span for a 10 m window
  return options;
}

TEST(FillEta, IdleThenFillingIsSeenFromTheRecentSpan) {
  // Idle for most of the window, then 1 GB filling in 5 minutes from t=0.
  const auto remaining = [](double t) { return t < 0 ? 1e9 : 1e9 - 1e9 / 300 * t; };
  const auto points = window(150, remaining);
  // Over the whole window most pairs are flat: no trend at all, 2.5 min before full.
  EXPECT_FALSE(fill_eta(points).eta_seconds);
  const FillEstimate estimate = fill_eta(points, recent_options());
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_TRUE(estimate.recent);
  EXPECT_NEAR(*estimate.eta_seconds, 150, 15);
  EXPECT_GE(estimate.span_seconds, 150);
}

TEST(FillEta, FasterFillingOverridesTheSlowerWindow) {
  // 1 MB/s for a long time, then 4 MB/s from t=0.
  const auto remaining = [](double t) { return t < 0 ? 2e9 - 1e6 * t : 2e9 - 4e6 * t; };
  const auto points = window(300, remaining);
  const FillEstimate estimate = fill_eta(points, recent_options());
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_TRUE(estimate.recent);
  EXPECT_NEAR(*estimate.rate, -4e6, 1e3);
}

TEST(FillEta, SteadyNoisyFillKeepsTheWholeWindow) {
  std::mt19937 random(11);
  std::normal_distribution<double> noise(0, 2e6);
  const auto points = window(0, [&](double t) { return 5e9 - 1e6 * (t + 600) + noise(random); });
  const FillEstimate estimate = fill_eta(points, recent_options());
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_FALSE(estimate.recent);
  EXPECT_NEAR(*estimate.rate, -1e6, 1e5);
}

TEST(FillEta, OneCheckpointWriteInTheRecentSpanIsNotATrend) {
  // Flat, one 5 GB write 75 s ago (the middle of the recent span), flat again.
  const auto points = window(75, [](double t) { return t < 0 ? 2e10 : 1.5e10; });
  const FillEstimate estimate = fill_eta(points, recent_options());
  EXPECT_FALSE(estimate.recent);
  EXPECT_FALSE(estimate.eta_seconds);
}

TEST(FillEta, AWriteShorterThanTheRecentSpanIsNotATrend) {
  // A write at 0.5 GB/s from t=0 after an idle window, seen 115 s into the 150 s span: a
  // checkpoint being saved looks like this, and it may end any moment.
  const auto writing = [](double t) { return t < 0 ? 2e12 : 2e12 - 5e8 * t; };
  const FillEstimate early = fill_eta(window(115, writing), recent_options());
  EXPECT_FALSE(early.recent);
  EXPECT_FALSE(early.eta_seconds);
  // Still writing once it has lasted the whole span: a trend.
  const FillEstimate late = fill_eta(window(155, writing), recent_options());
  EXPECT_TRUE(late.recent);
  ASSERT_TRUE(late.eta_seconds);
  EXPECT_NEAR(*late.eta_seconds, (2e12 - 5e8 * 155) / 5e8, 1);
}

TEST(FillEta, MemoryStepWithNoiseIsNotATrend) {
  // MemAvailable jitters by 50 MB; a job allocated 2 GB once, 75 s ago.
  std::mt19937 random(5);
  std::normal_distribution<double> noise(0, 5e7);
  const auto points =
      window(75, [&](double t) { return (t < 0 ? 1.2e10 : 1.0e10) + noise(random); });
  const FillEstimate estimate = fill_eta(points, recent_options());
  EXPECT_FALSE(estimate.recent);
}

TEST(FillEta, RegularCheckpointsKeepTheAverageRate) {
  // 1 GB every 60 s for the whole window: the recent span holds only 2-3 steps.
  const auto points = window(600, [](double t) { return 1e11 - 1e9 * std::floor(t / 60); });
  const FillEstimate estimate = fill_eta(points, recent_options());
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_NEAR(-*estimate.rate, 1e9 / 60, 1e9 / 60 * 0.15);
}

TEST(FillEta, ShortSeriesHasNoSeparateRecentEstimate) {
  // Everything is recent: the whole series is the estimate.
  const FillEstimate estimate = fill_eta(line(1000, 10, 20), recent_options());
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_FALSE(estimate.recent);
}

/// Two numbers alike: equal, or both NaN, or both absent.
bool alike(std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return !a && !b;
  return *a == *b || (std::isnan(*a) && std::isnan(*b));
}

/// The estimate field by field, doubles to the bit.
void expect_same(const FillEstimate& a, const FillEstimate& b, const std::string& where) {
  EXPECT_EQ(a.samples, b.samples) << where;
  EXPECT_EQ(a.span_seconds, b.span_seconds) << where;
  EXPECT_TRUE(alike(a.rate, b.rate)) << where;
  EXPECT_TRUE(alike(a.eta_seconds, b.eta_seconds)) << where;
  EXPECT_TRUE(alike(a.agreement, b.agreement)) << where;
  EXPECT_EQ(a.recent, b.recent) << where;
  EXPECT_EQ(a.stalled, b.stalled) << where;
  EXPECT_EQ(a.restarted, b.restarted) << where;
}

TEST(FitCache, GivesExactlyTheEstimateOfAFitFromScratch) {
  // Sliding windows over series of every shape watch meets (memory's random walk, a disk
  // written in steps, level stretches, a burst, space freed at once, repeated values and
  // instants, skipped samples), with and without thinning and the recent span: the
  // cached fit of each window is the fit from scratch, to the bit.
  std::mt19937_64 random(7);
  std::normal_distribution<double> noise(0, 4e6);
  for (const int shape : {0, 1, 2, 3}) {
    for (const std::size_t window : {30u, 64u, 65u, 200u, 601u}) {
      FillOptions options;
      options.recent_seconds = shape == 3 ? 0 : static_cast<double>(window) / 4;
      std::vector<SeriesPoint> series;
      double level = 5e10;
      double t = 0;
      for (int i = 0; i < static_cast<int>(window) + 150; ++i) {
        t += (i % 97 == 0) ? 3 : (i % 53 == 0 ? 0 : 1);  // a skipped tick, a repeated instant
        switch (shape) {
          case 0:
            level += std::round(noise(random));
            break;
          case 1:
            if (i % 7 == 0) level -= 3e6 * static_cast<double>(random() % 5);
            break;
          case 2:
            if (i > 100 && i < 140) level -= 5e8;  // a burst
            if (i == 160) level += 3e10;           // space freed at once
            break;
          default:
            level -= (i % 3 == 0) ? 1e6 : 0;
        }
        series.push_back({t, level});
      }
      FitCache cache;
      const std::span<const SeriesPoint> all(series);
      for (std::size_t end = 2; end <= series.size(); ++end) {
        const auto points = all.subspan(end > window ? end - window : 0, std::min(end, window));
        expect_same(fill_eta(points, options, &cache), fill_eta(points, options),
                    "shape " + std::to_string(shape) + " window " + std::to_string(window) +
                        " end " + std::to_string(end));
      }
    }
  }
}

TEST(FitCache, ASlidingWindowIsUpdatedNotRecomputed) {
  // watch at 1 Hz with a 10-minute window: once the window is full, its fits keep most of
  // their slopes from one sample to the next.
  std::mt19937_64 random(11);
  std::normal_distribution<double> noise(0, 4e6);
  std::vector<SeriesPoint> series;
  double level = 2e10;
  for (int i = 0; i < 900; ++i) {
    level += std::round(noise(random));
    series.push_back({static_cast<double>(i), level});
  }
  FillOptions options;
  options.recent_seconds = 150;
  FitCache cache;
  const std::span<const SeriesPoint> all(series);
  for (std::size_t end = 601; end <= 700; ++end) {
    (void)fill_eta(all.subspan(end - 601, 601), options, &cache);
  }
  const FitCache::Counters warm = cache.counters();
  for (std::size_t end = 701; end <= 900; ++end) {
    (void)fill_eta(all.subspan(end - 601, 601), options, &cache);
  }
  const std::size_t reused = cache.counters().reused - warm.reused;
  const std::size_t updated = cache.counters().updated - warm.updated;
  const std::size_t rebuilt = cache.counters().rebuilt - warm.rebuilt;
  EXPECT_GE(reused + updated, 200u);
  EXPECT_LE(rebuilt * 20, reused + updated) << reused << " reused, " << updated << " updated";
}

TEST(FitCache, ANaNIsFittedWithoutIt) {
  auto points = line(1000, 10, 20);
  points[5].remaining = std::nan("");
  FitCache cache;
  expect_same(fill_eta(points, {}, &cache), fill_eta(points), "nan");
  EXPECT_EQ(cache.counters().rebuilt + cache.counters().updated + cache.counters().reused, 0u);
}

}  // namespace
}  // namespace headroom
