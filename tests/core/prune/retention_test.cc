#include "core/prune/retention.h"

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

TEST(PlanRetention, FallsBackToMtimeWhenNoNameCarriesANumber) {
  const std::vector<Checkpoint> checkpoints = {checkpoint("b.pt", 300), checkpoint("a.pt", 100),
                                               checkpoint("c.pt", 200)};
  auto plan = plan_retention(checkpoints, policy(2, 0, "", MetricMode::kAuto, 0));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ordered_by, "modification time");
  const std::vector<std::pair<std::string, Decision>> expected = {
      {"a.pt", kDelete}, {"c.pt", kKeep}, {"b.pt", kKeep}};
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

TEST(PlanRetention, KeepEveryKeepsMultiplesAndUnnumberedExtrasStay) {
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
  EXPECT_NE(reasons_of(checkpoints, *plan, "final.pt").find("no step number"), std::string::npos);
}

}  // namespace
}  // namespace headroom
