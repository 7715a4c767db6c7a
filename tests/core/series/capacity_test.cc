#include "core/series/capacity.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace headroom {
namespace {

/// A series of `count` complete checkpoints of `bytes` each, newest first.
SeriesOnDisk series_of(std::size_t count, std::uint64_t bytes) {
  SeriesOnDisk series;
  series.name = "step_{N}.pt";
  for (std::size_t i = 0; i < count; ++i) series.members.push_back({bytes, true, false});
  return series;
}

TEST(PlanCapacity, TheSteadyStateOfRetentionIsNotAFullDisk) {
  // The case: three 8.1 MiB checkpoints on a 30 MiB disk leave 5.7 MiB free,
  // "room for 0 more" by free space alone; the save deletes the oldest first.
  const std::uint64_t size = 8 * kMiB + 100 * kKiB;
  const Capacity capacity = plan_capacity({30 * kMiB - 3 * size, size, 3, series_of(3, size)});
  EXPECT_FALSE(capacity.saves) << capacity_summary(
      "/ckpt", {30 * kMiB - 3 * size, size, 3, series_of(3, size)}, capacity);
  EXPECT_TRUE(capacity.frees_first);
  EXPECT_EQ(capacity.severity(), Severity::kWarn);
  EXPECT_EQ(capacity.room_bytes, 30 * kMiB - 2 * size);
}

TEST(PlanCapacity, CriticalOnlyWhenEvenRetentionCannotMakeRoom) {
  const std::uint64_t size = 8 * kMiB;
  // keep 1 never deletes the last complete checkpoint before writing: 2 x size at peak.
  const Capacity keep_one = plan_capacity({5 * kMiB, size, 1, series_of(1, size)});
  ASSERT_TRUE(keep_one.saves);
  EXPECT_EQ(*keep_one.saves, 0u);
  EXPECT_EQ(keep_one.severity(), Severity::kCritical);
  const CapacityInput input{5 * kMiB, 16 * kMiB, 2, series_of(2, size)};
  const Capacity big = plan_capacity(input);
  EXPECT_EQ(big.severity(), Severity::kCritical);
  EXPECT_EQ(capacity_summary("/ckpt", input, big),
            "/ckpt: the next checkpoint of step_{N}.pt (16.0 MiB, 17.8 MiB with margin) does not "
            "fit: 5.0 MiB free + 8.0 MiB that retention frees first");
}

TEST(PlanCapacity, AFreshRunRunsOutAfterTheSavesThatFit) {
  // No checkpoint yet, keep 4 of 10 MiB in 25 MiB: two saves, then the third fails.
  const CapacityInput input{25 * kMiB, 10 * kMiB, 4, {}};
  const Capacity capacity = plan_capacity(input);
  ASSERT_TRUE(capacity.saves);
  EXPECT_EQ(*capacity.saves, 2u);
  EXPECT_EQ(capacity.severity(), Severity::kWarn);
  EXPECT_NE(capacity_summary("/ckpt", input, capacity).find("then save 3 fails"),
            std::string::npos);
  // Plenty of room: every save fits by writing first.
  const Capacity roomy = plan_capacity({100 * kMiB, 10 * kMiB, 4, {}});
  EXPECT_FALSE(roomy.saves);
  EXPECT_FALSE(roomy.frees_first);
  EXPECT_EQ(roomy.severity(), Severity::kOk);
}

TEST(PlanCapacity, PinnedAndIncompleteMembersAreNeverCountedAsRoom) {
  SeriesOnDisk series = series_of(3, 8 * kMiB);
  series.members[2].pinned = true;  // the oldest is named by a symlink
  const Capacity capacity = plan_capacity({5 * kMiB, 8 * kMiB, 2, series});
  // Retention keeps the newest 1 and the pinned one: only the middle one frees room.
  EXPECT_EQ(capacity.room_bytes, 13 * kMiB);
  SeriesOnDisk broken = series_of(1, 8 * kMiB);
  broken.members.insert(broken.members.begin(), {kMiB, false, false});  // newer, incomplete
  EXPECT_EQ(plan_capacity({5 * kMiB, 8 * kMiB, 1, broken}).room_bytes, 5 * kMiB);
}

TEST(PlanCapacity, TempsOfDeadSavesAreRoomAndKeepAllNeverFrees) {
  SeriesOnDisk series = series_of(2, 8 * kMiB);
  series.reclaimable_bytes = 20 * kMiB;
  const Capacity capacity = plan_capacity({2 * kMiB, 8 * kMiB, 0, series});
  EXPECT_EQ(capacity.room_bytes, 22 * kMiB);
  ASSERT_TRUE(capacity.saves);
  EXPECT_EQ(*capacity.saves, 2u);  // 22 MiB, 9.4 MiB asked per save, nothing ever removed
}

TEST(PlanCapacity, ASaveCaughtInProgressIsTheNextSaveNotOneMore) {
  // The documented loop's disk mid-save: 22 MiB, keep 3 of 5.6 MiB; save_checkpoint deleted
  // the oldest first and has written 5 MiB of the new one. Counted as a stranger's bytes, the
  // next save "does not fit" (5.8 MiB free, 6.9 MiB asked) and the loop would be told to stop.
  const std::uint64_t size = 5 * kMiB + 600 * kKiB;
  SeriesOnDisk series = series_of(2, size);
  CapacityInput input{22 * kMiB - 2 * size - 5 * kMiB, size, 3, series};
  EXPECT_EQ(plan_capacity(input).severity(), Severity::kCritical);
  input.series.saving_bytes = 5 * kMiB;
  const Capacity capacity = plan_capacity(input);
  EXPECT_EQ(capacity.room_bytes, 22 * kMiB - 2 * size);
  EXPECT_EQ(capacity.severity(), Severity::kWarn);  // the steady state deletes first
  EXPECT_EQ(capacity_summary("/ckpt", input, capacity).find("room for"), std::string::npos);
  // Said, when the next save does not fit even so (keep 3 of 2: retention frees nothing).
  input.checkpoint_bytes = 12 * kMiB;
  EXPECT_EQ(capacity_summary("/ckpt", input, plan_capacity(input)),
            "/ckpt: the next checkpoint of step_{N}.pt (12.0 MiB, 13.6 MiB with margin) does not "
            "fit: 5.8 MiB free + 5.0 MiB the save in progress wrote");
}

}  // namespace
}  // namespace headroom
