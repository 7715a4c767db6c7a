#include "core/series/retention.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

Checkpoint checkpoint(const std::string& name, std::int64_t mtime_s, std::uint64_t bytes = 1000) {
  Checkpoint c;
  c.name = name;
  c.parsed = parse_checkpoint_name(name);
  c.tally.disk_bytes = bytes;
  c.tally.newest_mtime_ns = mtime_s * 1'000'000'000;
  return c;
}

/// name -> decision, in plan order.
std::vector<std::pair<std::string, Decision>> decisions(const std::vector<Checkpoint>& checkpoints,
                                                        const RetentionPlan& plan) {
  std::vector<std::pair<std::string, Decision>> out;
  for (const auto& item : plan.items) out.emplace_back(checkpoints[item.index].name, item.decision);
  return out;
}

std::string reasons_of(const std::vector<Checkpoint>& checkpoints, const RetentionPlan& plan,
                       const std::string& name) {
  for (const auto& item : plan.items) {
    if (checkpoints[item.index].name != name) continue;
    std::string text;
    for (const auto& reason : item.reasons) text += reason + "; ";
    return text;
  }
  return "(not in plan)";
}

RetentionPolicy policy(std::size_t keep_last, std::size_t keep_best, std::string metric,
                       MetricMode mode, std::uint64_t keep_every) {
  RetentionPolicy policy;
  policy.keep_last = keep_last;
  policy.keep_best = keep_best;
  policy.metric = std::move(metric);
  policy.mode = mode;
  policy.keep_every = keep_every;
  return policy;
}

constexpr Decision kKeep = Decision::kKeep;
constexpr Decision kDelete = Decision::kDelete;

TEST(PlanRetention, OrdersByStepNumberNotByNameOrMtime) {
  // checkpoint-900 sorts after checkpoint-1000 as text and is newer on disk
  // (a copy), but step 1000 is the newest checkpoint.
  const std::vector<Checkpoint> checkpoints = {
      checkpoint("checkpoint-900", 500), checkpoint("checkpoint-1000", 400),
      checkpoint("checkpoint-100", 100), checkpoint("checkpoint-500", 300)};
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ordered_by, "step number");
  const std::vector<std::pair<std::string, Decision>> expected = {{"checkpoint-100", kDelete},
                                                                  {"checkpoint-500", kDelete},
                                                                  {"checkpoint-900", kDelete},
                                                                  {"checkpoint-1000", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  EXPECT_EQ(plan->deletions, 3u);
  EXPECT_EQ(plan->delete_bytes, 3000u);
  EXPECT_NE(reasons_of(checkpoints, *plan, "checkpoint-1000").find("newest complete"),
            std::string::npos);
}

TEST(PlanRetention, NamesWithoutANumberAreEachASeriesOfOne) {
  // resnet50.pt and resnet18.pt are two models, not two saves of one.
  const std::vector<Checkpoint> checkpoints = {checkpoint("b.pt", 300), checkpoint("a.pt", 100),
                                               checkpoint("resnet50.pt", 200),
                                               checkpoint("resnet18.pt", 50)};
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->deletions, 0u);
  EXPECT_EQ(plan->series.size(), 4u);
  // One glob as the series (save_checkpoint's pattern=): ordered by mtime.
  RetentionPolicy glob = policy(2, 0, "", MetricMode::kAuto, 0);
  glob.one_series = "*.pt";
  auto by_mtime = plan_retention(checkpoints, glob);
  ASSERT_TRUE(by_mtime);
  EXPECT_EQ(by_mtime->ordered_by, "modification time");
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"resnet18.pt", kDelete}, {"a.pt", kDelete}, {"resnet50.pt", kKeep}, {"b.pt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *by_mtime), expected);
}

TEST(PlanRetention, SeriesAreTheNamesThatShareAllButTheStep) {
  const std::vector<Checkpoint> checkpoints = {
      checkpoint("fold0_epoch_009.pt", 9),  checkpoint("fold0_epoch_010.pt", 10),
      checkpoint("fold1_epoch_001.pt", 11), checkpoint("fold1_epoch_002.pt", 12),
      checkpoint("fold1_epoch_003.pt", 13), checkpoint("resnet18.pt", 1),
      checkpoint("resnet50.pt", 20)};
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"fold0_epoch_009.pt", kDelete}, {"fold0_epoch_010.pt", kKeep},
      {"fold1_epoch_001.pt", kDelete}, {"fold1_epoch_002.pt", kDelete},
      {"fold1_epoch_003.pt", kKeep},   {"resnet18.pt", kKeep},
      {"resnet50.pt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  ASSERT_EQ(plan->series.size(), 4u);
  EXPECT_EQ(plan->series[0].name, "fold0_epoch_{E}.pt");
  EXPECT_EQ(plan->series[1].name, "fold1_epoch_{E}.pt");
}

/// A Hugging Face checkpoint-N/ directory with the files the Trainer writes.
Checkpoint trainer_checkpoint(std::uint64_t step, std::int64_t mtime, bool complete) {
  Checkpoint c = checkpoint("checkpoint-" + std::to_string(step), mtime);
  c.directory = true;
  c.contents = {{"model.safetensors", complete ? 500u << 20 : 3u << 10}};
  if (complete) {
    for (const char* name : {"optimizer.pt", "rng_state.pth", "scheduler.pt", "trainer_state.json",
                             "training_args.bin"}) {
      c.contents.push_back({name, 1u << 20});
    }
    c.tally.apparent_bytes = 505u << 20;
  } else {
    c.tally.apparent_bytes = 3u << 10;
  }
  return c;
}

TEST(PlanRetention, AHalfWrittenNewestCheckpointPushesNoGoodOneOut) {
  // checkpoint-1000 died of ENOSPC after 3 KB of model.safetensors: it stopped
  // growing, but it lacks what its siblings have.
  const std::vector<Checkpoint> checkpoints = {trainer_checkpoint(800, 1, true),
                                               trainer_checkpoint(900, 2, true),
                                               trainer_checkpoint(1000, 3, false)};
  auto plan = plan_retention(checkpoints, policy(2, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"checkpoint-800", kKeep}, {"checkpoint-900", kKeep}, {"checkpoint-1000", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  EXPECT_NE(reasons_of(checkpoints, *plan, "checkpoint-900").find("newest complete"),
            std::string::npos);
  const std::string why = reasons_of(checkpoints, *plan, "checkpoint-1000");
  EXPECT_NE(why.find("lacks optimizer.pt, rng_state.pth, scheduler.pt, trainer_state.json"),
            std::string::npos)
      << why;
  EXPECT_FALSE(plan->items[2].complete);
  // With --keep-last 1 the older good one goes, the newest good one and the broken one stay.
  auto one = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(one);
  const std::vector<std::pair<std::string, Decision>> expected_one = {
      {"checkpoint-800", kDelete}, {"checkpoint-900", kKeep}, {"checkpoint-1000", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *one), expected_one);
}

TEST(PlanRetention, ACutShortFileIsIncompleteAndAnOlderOneGoes) {
  std::vector<Checkpoint> checkpoints = {checkpoint("step_1.pt", 1), checkpoint("step_2.pt", 2),
                                         checkpoint("step_3.pt", 3), checkpoint("step_4.pt", 4)};
  checkpoints[1].damage = "a zip archive (torch.save) of 1.0 KiB without its end record";
  checkpoints[3].damage = "a zip archive (torch.save) of 1.0 KiB without its end record";
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"step_1.pt", kDelete}, {"step_2.pt", kDelete}, {"step_3.pt", kKeep}, {"step_4.pt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  EXPECT_NE(reasons_of(checkpoints, *plan, "step_2.pt").find("incomplete: cut short"),
            std::string::npos);
  EXPECT_NE(reasons_of(checkpoints, *plan, "step_4.pt").find("newer than every complete"),
            std::string::npos);
}

TEST(PlanRetention, NothingNewerThanDeepSpeedsLatestCounts) {
  std::vector<Checkpoint> checkpoints = {checkpoint("global_step100", 1),
                                         checkpoint("global_step200", 2),
                                         checkpoint("global_step300", 3)};
  for (Checkpoint& c : checkpoints) c.directory = true;
  checkpoints[1].latest_marker = true;
  checkpoints[1].named_by = "named by DeepSpeed's 'latest' file";
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"global_step100", kDelete}, {"global_step200", kKeep}, {"global_step300", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  EXPECT_NE(reasons_of(checkpoints, *plan, "global_step300").find("'latest'"), std::string::npos);
  EXPECT_EQ(plan->series[0].newest_complete, 1u);
}

TEST(PlanRetention, TempsOfDeadSavesGoAndLiveOnesStay) {
  std::vector<Checkpoint> checkpoints = {checkpoint("step_1.pt", 1),
                                         checkpoint(".step_2.pt.headroom-tmp-4242-ab12cd34", 2),
                                         checkpoint(".step_3.pt.headroom-tmp-4343-ab12cd34", 3)};
  for (std::size_t i = 1; i < 3; ++i) {
    checkpoints[i].kind = EntryKind::kSaveTemp;
    checkpoints[i].temp = *parse_save_temp(checkpoints[i].name);
  }
  checkpoints[1].writer = WriterState::kGone;
  checkpoints[2].writer = WriterState::kAlive;
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"step_1.pt", kKeep},
      {".step_2.pt.headroom-tmp-4242-ab12cd34", kDelete},
      {".step_3.pt.headroom-tmp-4343-ab12cd34", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  EXPECT_NE(reasons_of(checkpoints, *plan, ".step_2.pt.headroom-tmp-4242-ab12cd34")
                .find("writer (pid 4242) is gone"),
            std::string::npos);
  EXPECT_EQ(plan->deletions, 1u);
}

TEST(PlanRetention, TheCheckpointJustSavedIsTheNewestWhateverItsStep) {
  // A restarted run saves step 100 beside an earlier run's step 900.
  const std::vector<Checkpoint> checkpoints = {checkpoint("step_900.pt", 1),
                                               checkpoint("step_100.pt", 2)};
  RetentionPolicy saved = policy(1, 0, "", MetricMode::kAuto, 0);
  saved.just_saved = "step_100.pt";
  auto plan = plan_retention(checkpoints, saved);
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {{"step_900.pt", kDelete},
                                                                  {"step_100.pt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
}

TEST(PlanRetention, NeverDeletesWhatIsBeingWrittenHeldNamedOrBestLast) {
  std::vector<Checkpoint> checkpoints = {
      checkpoint("epoch=0-step=100.ckpt", 100), checkpoint("epoch=1-step=200.ckpt", 200),
      checkpoint("epoch=2-step=300.ckpt", 300), checkpoint("epoch=3-step=400.ckpt", 400),
      checkpoint("epoch=4-step=500.ckpt", 500), checkpoint("last.ckpt", 500)};
  checkpoints[4].growing = true;                                    // being written
  checkpoints[1].holders.push_back({42, "python", "alice", "fd"});  // open by a process
  checkpoints[0].named_by = "symlink 'latest' points to it";
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"epoch=0-step=100.ckpt", kKeep},   {"epoch=1-step=200.ckpt", kKeep},
      {"epoch=2-step=300.ckpt", kDelete}, {"epoch=3-step=400.ckpt", kKeep},
      {"epoch=4-step=500.ckpt", kKeep},   {"last.ckpt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  // The growing one is not complete, so step 400 is the newest complete checkpoint.
  EXPECT_NE(reasons_of(checkpoints, *plan, "epoch=3-step=400.ckpt").find("newest complete"),
            std::string::npos);
  EXPECT_NE(reasons_of(checkpoints, *plan, "epoch=4-step=500.ckpt").find("still being written"),
            std::string::npos);
  EXPECT_NE(reasons_of(checkpoints, *plan, "epoch=1-step=200.ckpt").find("python[42]"),
            std::string::npos);
  EXPECT_NE(reasons_of(checkpoints, *plan, "last.ckpt").find("best/last"), std::string::npos);
}

TEST(PlanRetention, KeepsTheBestByTheMetricInTheNames) {
  const std::vector<Checkpoint> checkpoints = {
      checkpoint("epoch=0-val_loss=0.90.ckpt", 1), checkpoint("epoch=1-val_loss=0.40.ckpt", 2),
      checkpoint("epoch=2-val_loss=0.55.ckpt", 3), checkpoint("epoch=3-val_loss=0.35.ckpt", 4),
      checkpoint("epoch=4-val_loss=0.60.ckpt", 5)};
  auto plan = plan_retention(checkpoints, policy(1, 2, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->metric, "val_loss");
  EXPECT_EQ(plan->mode, MetricMode::kMin);
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"epoch=0-val_loss=0.90.ckpt", kDelete},
      {"epoch=1-val_loss=0.40.ckpt", kKeep},
      {"epoch=2-val_loss=0.55.ckpt", kDelete},
      {"epoch=3-val_loss=0.35.ckpt", kKeep},
      {"epoch=4-val_loss=0.60.ckpt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  // Higher accuracy is better.
  const std::vector<Checkpoint> accuracy = {checkpoint("step=1-val_acc=0.5.ckpt", 1),
                                            checkpoint("step=2-val_acc=0.9.ckpt", 2),
                                            checkpoint("step=3-val_acc=0.7.ckpt", 3)};
  auto by_accuracy = plan_retention(accuracy, policy(1, 1, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(by_accuracy);
  const std::vector<std::pair<std::string, Decision>> expected_accuracy = {
      {"step=1-val_acc=0.5.ckpt", kDelete},
      {"step=2-val_acc=0.9.ckpt", kKeep},
      {"step=3-val_acc=0.7.ckpt", kKeep}};
  EXPECT_EQ(decisions(accuracy, *by_accuracy), expected_accuracy);
}

TEST(PlanRetention, RefusesAmbiguousOrMissingMetrics) {
  const std::vector<Checkpoint> two = {checkpoint("step=1-val_loss=0.5-val_acc=0.2.ckpt", 1)};
  auto ambiguous = plan_retention(two, policy(1, 1, "", MetricMode::kAuto, 0));
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message.find("--metric"), std::string::npos);
  EXPECT_TRUE(plan_retention(two, policy(1, 1, "val_acc", MetricMode::kAuto, 0)));
  const std::vector<Checkpoint> none = {checkpoint("checkpoint-5", 1)};
  EXPECT_FALSE(plan_retention(none, policy(1, 1, "", MetricMode::kAuto, 0)));
  const std::vector<Checkpoint> odd = {checkpoint("step=1-widget=3.ckpt", 1)};
  auto unknown = plan_retention(odd, policy(1, 1, "", MetricMode::kAuto, 0));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("--mode"), std::string::npos);
  EXPECT_TRUE(plan_retention(odd, policy(1, 1, "", MetricMode::kMax, 0)));
}

TEST(PlanRetention, KeepEveryKeepsMultiplesAndUnnumberedNamesStay) {
  const std::vector<Checkpoint> checkpoints = {
      checkpoint("checkpoint-100", 1), checkpoint("checkpoint-200", 2),
      checkpoint("checkpoint-300", 3), checkpoint("checkpoint-400", 4), checkpoint("final.pt", 9)};
  auto plan = plan_retention(checkpoints, policy(1, 0, "", MetricMode::kAuto, 200));
  ASSERT_TRUE(plan);
  const std::vector<std::pair<std::string, Decision>> expected = {{"checkpoint-100", kDelete},
                                                                  {"checkpoint-200", kKeep},
                                                                  {"checkpoint-300", kDelete},
                                                                  {"checkpoint-400", kKeep},
                                                                  {"final.pt", kKeep}};
  EXPECT_EQ(decisions(checkpoints, *plan), expected);
  // final.pt is a series of its own: its newest complete checkpoint.
  EXPECT_NE(reasons_of(checkpoints, *plan, "final.pt").find("newest complete"), std::string::npos);
}

}  // namespace
}  // namespace headroom
