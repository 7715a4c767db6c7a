#include "core/predict/history.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

Sample sample_at(double seconds, std::int64_t avail, std::string device = "0:42") {
  Sample sample;
  sample.monotonic = std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds)));
  FilesystemSample filesystem;
  filesystem.path = "/ckpt";
  filesystem.mountpoint = "/ckpt";
  filesystem.device = std::move(device);
  filesystem.ok = true;
  filesystem.total_bytes = 10000;
  filesystem.free_bytes = static_cast<std::uint64_t>(avail);
  filesystem.avail_bytes = static_cast<std::uint64_t>(avail);
  sample.filesystems.push_back(filesystem);
  sample.memory = MemorySample{1000, 500, 0, 0};
  return sample;
}

TEST(History, DropsPointsOlderThanTheWindow) {
  History history(std::chrono::seconds(10));
  for (int i = 0; i <= 30; ++i) history.add(sample_at(i, 10000 - 100 * i));
  EXPECT_EQ(history.size("/ckpt"), 11u);  // t = 20..30
  const Predictions predictions = history.predict();
  ASSERT_NE(predictions.filesystem("/ckpt"), nullptr);
  EXPECT_NEAR(*predictions.filesystem("/ckpt")->eta_seconds, 70, 1e-6);
  ASSERT_TRUE(predictions.memory);
  EXPECT_FALSE(predictions.memory->eta_seconds);
}

TEST(History, CapacityBoundsEverySeries) {
  History history(std::chrono::hours(1), 5);
  for (int i = 0; i < 20; ++i) history.add(sample_at(i, 10000 - i));
  EXPECT_EQ(history.size("/ckpt"), 5u);
}

TEST(History, ARemountRestartsTheSeries) {
  History history(std::chrono::minutes(1));
  for (int i = 0; i < 10; ++i) history.add(sample_at(i, 10000 - 100 * i));
  history.add(sample_at(10, 9000, "0:99"));
  EXPECT_EQ(history.size("/ckpt"), 1u);
}

TEST(History, AVanishedPathForgetsItsTrend) {
  History history(std::chrono::minutes(1));
  for (int i = 0; i < 10; ++i) history.add(sample_at(i, 10000 - 100 * i));
  Sample gone = sample_at(10, 0);
  gone.filesystems[0].ok = false;
  history.add(gone);
  EXPECT_EQ(history.size("/ckpt"), 0u);
  EXPECT_EQ(history.predict().filesystem("/ckpt"), nullptr);
}

TEST(History, PathsOnOneFilesystemShareAnEstimateOnlyWhileTheirPointsAgree) {
  History history(std::chrono::minutes(1));
  for (int i = 0; i < 10; ++i) {
    Sample sample = sample_at(i, 10000 - 100 * i);
    FilesystemSample tmp = sample.filesystems[0];
    tmp.path = "/tmp";
    // Same device; /tmp's statvfs is a moment later, after one more write at the end.
    if (i == 9) tmp.avail_bytes -= 50;
    sample.filesystems.push_back(tmp);
    history.add(sample);
  }
  const Predictions predictions = history.predict();
  const FillEstimate* ckpt = predictions.filesystem("/ckpt");
  const FillEstimate* tmp = predictions.filesystem("/tmp");
  ASSERT_NE(ckpt, nullptr);
  ASSERT_NE(tmp, nullptr);
  EXPECT_NEAR(*ckpt->eta_seconds, 9100.0 / 100, 1e-6);
  // Not the /ckpt estimate copied: its own points, its own (sooner) ETA.
  EXPECT_LT(*tmp->eta_seconds, *ckpt->eta_seconds);

  History same(std::chrono::minutes(1));
  for (int i = 0; i < 10; ++i) {
    Sample sample = sample_at(i, 10000 - 100 * i);
    sample.filesystems.push_back(sample.filesystems[0]);
    sample.filesystems[1].path = "/tmp";
    same.add(sample);
  }
  const Predictions shared = same.predict();
  EXPECT_DOUBLE_EQ(*shared.filesystem("/tmp")->eta_seconds,
                   *shared.filesystem("/ckpt")->eta_seconds);
}

}  // namespace
}  // namespace headroom
