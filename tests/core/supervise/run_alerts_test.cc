// The alert options `headroom run` passes to the shared engine so a short job
// is not told "memory full in 3m": a time-to-full needs a trend of at least
// eta_min_span, and memory's only counts once MemAvailable is low.

#include <gtest/gtest.h>

#include "core/alerts/rules.h"

namespace headroom {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

Sample memory_sample(std::uint64_t total, std::uint64_t available) {
  Sample sample;
  sample.time = std::chrono::system_clock::now();
  sample.monotonic = std::chrono::steady_clock::now();
  sample.memory = MemorySample{total, available, 0, 0};
  return sample;
}

Predictions memory_filling(double span_seconds, double eta_seconds) {
  Predictions predictions;
  FillEstimate estimate;
  estimate.samples = 10;
  estimate.span_seconds = span_seconds;
  estimate.rate = -1e6;
  estimate.eta_seconds = eta_seconds;
  estimate.agreement = 1;
  predictions.memory = estimate;
  return predictions;
}

bool fires(AlertEngine& engine, const Sample& sample, const Predictions& predictions,
           std::string_view rule) {
  for (const AlertEvent& event : engine.evaluate(sample, predictions)) {
    if (event.rule == rule && event.kind == AlertKind::kFiring) return true;
  }
  return false;
}

TEST(RunAlertOptions, WatchDefaultsWarnOnAMemoryTrendOnceLessThanHalfIsLeft) {
  AlertEngine engine;
  EXPECT_FALSE(fires(engine, memory_sample(64 * kGiB, 60 * kGiB), memory_filling(5, 180),
                     "memory_fill_eta"));
  EXPECT_TRUE(fires(engine, memory_sample(64 * kGiB, 30 * kGiB), memory_filling(5, 180),
                    "memory_fill_eta"));
}

TEST(RunAlertOptions, AFullingCgroupCountsEvenWhenTheHostHasPlenty) {
  AlertEngine engine;
  Sample sample = memory_sample(64 * kGiB, 60 * kGiB);
  sample.cgroup =
      CgroupSample{"/job", 8 * kGiB, 7 * kGiB, 0, std::nullopt, std::nullopt};  // 1 of 8 GiB left
  EXPECT_TRUE(fires(engine, sample, memory_filling(5, 180), "memory_fill_eta"));
}

TEST(RunAlertOptions, AShortTrendIsNotAWarning) {
  AlertConfig config;
  config.eta_min_span = std::chrono::seconds(60);
  AlertEngine engine(config);
  EXPECT_FALSE(fires(engine, memory_sample(64 * kGiB, 2 * kGiB), memory_filling(20, 180),
                     "memory_fill_eta"));
  EXPECT_TRUE(fires(engine, memory_sample(64 * kGiB, 2 * kGiB), memory_filling(90, 180),
                    "memory_fill_eta"));
}

TEST(RunAlertOptions, MemoryEtaWaitsUntilAvailableMemoryIsLow) {
  AlertConfig config;
  config.memory_eta_below_percent = 20;
  AlertEngine engine(config);
  // A job allocating steadily on a host with 60 of 64 GiB available: quiet.
  EXPECT_FALSE(fires(engine, memory_sample(64 * kGiB, 60 * kGiB), memory_filling(300, 180),
                     "memory_fill_eta"));
  // The same trend with 8 of 64 GiB (12.5%) left: now it matters.
  EXPECT_TRUE(fires(engine, memory_sample(64 * kGiB, 8 * kGiB), memory_filling(300, 180),
                    "memory_fill_eta"));
}

TEST(RunAlertOptions, OutOfRangeOptionsAreRejected) {
  AlertConfig config;
  config.memory_eta_below_percent = 0;
  EXPECT_FALSE(validate(config));
  config.memory_eta_below_percent = 20;
  config.eta_min_span = std::chrono::seconds(-1);
  EXPECT_FALSE(validate(config));
  config.eta_min_span = std::chrono::seconds(60);
  EXPECT_TRUE(validate(config));
}

}  // namespace
}  // namespace headroom
