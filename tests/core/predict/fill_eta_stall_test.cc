// Issue 21, item 4: an estimate that outlives its trend. Writes that stop leave
// "full in 5s" for minutes, and a disk emptied at once kept an ETA of minutes
// from the slopes of the disk that was.
#include <gtest/gtest.h>

#include "core/predict/fill_eta.h"

namespace headroom {
namespace {

/// 1 s apart: `fill` seconds falling by `rate`, then `flat` seconds unchanged.
std::vector<SeriesPoint> fill_then_flat(double start, double rate, int fill, int flat) {
  std::vector<SeriesPoint> points;
  double remaining = start;
  for (int i = 0; i <= fill + flat; ++i) {
    points.push_back({static_cast<double>(i), remaining});
    if (i < fill) remaining -= rate;
  }
  return points;
}

TEST(FillEtaStall, WritesThatStopNearFullClearTheEtaAtOnce) {
  // 100 left falling 20/s: "full in 5s". After 5 s with nothing written the
  // disk would be full by now: the trend is contradicted.
  EXPECT_TRUE(fill_eta(fill_then_flat(1000, 20, 45, 4)).eta_seconds);
  const auto stopped = fill_then_flat(1000, 20, 45, 5);
  const FillEstimate estimate = fill_eta(stopped);
  EXPECT_FALSE(estimate.eta_seconds);
  EXPECT_TRUE(estimate.stalled);
  ASSERT_TRUE(estimate.rate);
  EXPECT_EQ(*estimate.rate, 0.0);
  // Still writing: the estimate stands.
  const auto writing = fill_then_flat(1000, 20, 45, 0);
  ASSERT_TRUE(fill_eta(writing).eta_seconds);
  EXPECT_NEAR(*fill_eta(writing).eta_seconds, 100.0 / 20, 1e-9);
  EXPECT_FALSE(fill_eta(writing).stalled);
}

TEST(FillEtaStall, StaysStalledWhileTheWindowsRateDecays) {
  // Long after the stop the window's median slope is a fraction of the real one;
  // judged against it, "full in 5s" would come back. It stays gone.
  for (int flat = 5; flat <= 40; ++flat) {
    const FillEstimate estimate = fill_eta(fill_then_flat(1000, 20, 45, flat));
    EXPECT_FALSE(estimate.eta_seconds) << flat << " s after the stop";
  }
}

TEST(FillEtaStall, AFullDiskKeepsItsZero) {
  const FillEstimate estimate = fill_eta(fill_then_flat(1000, 20, 50, 10));
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_EQ(*estimate.eta_seconds, 0.0);
  EXPECT_FALSE(estimate.stalled);
}

TEST(FillEtaStall, APauseShortAgainstTheEtaKeepsIt) {
  // 2000 left at 10/s (200 s to full): a 20 s pause between checkpoints is
  // a tenth of that, and the estimate stays.
  const auto paused = fill_then_flat(2500, 10, 50, 20);
  const FillEstimate estimate = fill_eta(paused);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_FALSE(estimate.stalled);
}

TEST(FillEtaStall, SpaceFreedAtOnceRestartsTheSeries) {
  // Filled from 1000 to 100 over 45 s, then emptied back to 1000.
  auto points = fill_then_flat(1000, 20, 45, 0);
  points.push_back({46, 1000});
  FillEstimate estimate = fill_eta(points);
  EXPECT_TRUE(estimate.restarted);
  EXPECT_FALSE(estimate.eta_seconds);  // one point of the new disk: no estimate yet
  // Filling again after the jump: estimated from the new points only.
  for (int i = 1; i <= 5; ++i) points.push_back({46.0 + i, 1000.0 - 4 * i});
  estimate = fill_eta(points);
  EXPECT_TRUE(estimate.restarted);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_NEAR(*estimate.rate, -4, 1e-9);
  EXPECT_NEAR(*estimate.eta_seconds, 980.0 / 4, 1e-9);
}

TEST(FillEtaStall, ASmallRiseAmidAFillIsNotAJump) {
  // A log rotation frees 50 while 900 were consumed in the window: the trend stays.
  auto points = fill_then_flat(1000, 20, 45, 0);
  points.push_back({46, 150});
  for (int i = 1; i <= 3; ++i) points.push_back({46.0 + i, 150.0 - 20 * i});
  const FillEstimate estimate = fill_eta(points);
  EXPECT_FALSE(estimate.restarted);
  ASSERT_TRUE(estimate.eta_seconds);
  EXPECT_NEAR(*estimate.rate, -20, 1e-9);
}

}  // namespace
}  // namespace headroom
