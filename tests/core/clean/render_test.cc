// The text and JSON of `headroom clean` (core/clean/render.h), as a user reads them.

#include "core/clean/render.h"

#include <gtest/gtest.h>

#include "core/fake_syscalls.h"
#include "core/golden.h"

namespace headroom {
namespace {

CleanPlan plan_with(std::size_t kept) {
  CleanPlan plan;
  CleanItem item;
  item.kind = CleanKind::kShmFile;
  item.path = "/dev/shm/nccl-a1b2c3";
  item.owner = "alice";
  item.bytes = 3 * 1024 * 1024;
  item.age = std::chrono::hours(2);
  item.why_safe = "no process has it open or mapped (every process inspected)";
  plan.items.push_back(item);
  plan.total_bytes = item.bytes;
  for (std::size_t i = 0; i < kept; ++i) {
    plan.kept.push_back({"/dev/shm/torch_" + std::to_string(i), "in use by pid 42 (python3)", 0});
  }
  return plan;
}

TEST(CleanRender, ThePlanSaysWhatWouldGoAndWhy) {
  const std::string text = render_clean_plan(plan_with(1), /*verbose=*/false);
  EXPECT_EQ(text.rfind("Would free 3.0 MiB in 1 item (run again with --yes to remove):\n", 0), 0U)
      << text;
  EXPECT_NE(text.find("/dev/shm/nccl-a1b2c3"), std::string::npos) << text;
  EXPECT_NE(text.find("every process inspected"), std::string::npos) << text;
  EXPECT_NE(text.find("Keeping 1 item:\n  /dev/shm/torch_0: in use by pid 42"), std::string::npos)
      << text;
}

TEST(CleanRender, TwentyKeptItemsAreShownUnlessVerbose) {
  const std::string brief = render_clean_plan(plan_with(25), false);
  EXPECT_NE(brief.find("/dev/shm/torch_19:"), std::string::npos);
  EXPECT_EQ(brief.find("/dev/shm/torch_20:"), std::string::npos);
  EXPECT_NE(brief.find("... 5 more (-v shows all)"), std::string::npos) << brief;
  const std::string all = render_clean_plan(plan_with(25), true);
  EXPECT_NE(all.find("/dev/shm/torch_24:"), std::string::npos);
}

TEST(CleanRender, BlockingPidsGiveTheTwoWaysForward) {
  CleanPlan plan = plan_with(0);
  plan.blocking_pids = {7, 9};
  plan.visibility_note = "2 processes could not be inspected";
  const std::string text = render_clean_plan(plan, false);
  EXPECT_NE(text.find("--ignore-unreadable 7,9"), std::string::npos) << text;
  EXPECT_EQ(clean_plan_to_json(plan)["blocking_pids"], nlohmann::json::array({7, 9}));
}

TEST(CleanRender, TheResultNamesTheAuditLogOnlyWhenSomethingWasRemoved) {
  const CleanPlan plan = plan_with(0);
  CleanOptions options;
  options.audit_log = "/var/log/headroom/clean.log";
  CleanResult result;
  EXPECT_EQ(render_clean_result(result, plan, options).find("audit log"), std::string::npos);
  result.removed = plan.items;
  result.freed_bytes = plan.total_bytes;
  const std::string text = render_clean_result(result, plan, options);
  EXPECT_EQ(text.rfind("Freed 3.0 MiB: removed 1 item, skipped 0\n", 0), 0U) << text;
  EXPECT_NE(text.find("audit log: /var/log/headroom/clean.log"), std::string::npos) << text;
  const auto json = clean_result_to_json(result, plan, options);
  EXPECT_EQ(json["mode"], "apply");
  EXPECT_EQ(json["removed"][0]["kind"], std::string(to_string(CleanKind::kShmFile)));
}

TEST(CleanRender, TheDefaultAuditLogFollowsTheUserAndXdg) {
  testing::FakeSyscalls syscalls;
  Context context;
  context.syscalls = &syscalls;
  EXPECT_EQ(default_audit_log(context), "/var/log/headroom/clean.log");  // root
  syscalls.uid_ = 1000;
  EXPECT_EQ(default_audit_log(context), "");
  context.environment["HOME"] = "/home/alice";
  EXPECT_EQ(default_audit_log(context), "/home/alice/.local/state/headroom/clean.log");
  context.environment["XDG_STATE_HOME"] = "/state";
  EXPECT_EQ(default_audit_log(context), "/state/headroom/clean.log");
}

/// The golden plan and result, text and JSON (tests/golden/clean_*).
TEST(CleanRender, GoldenPlanAndResult) {
  CleanPlan plan = plan_with(2);
  CleanItem sysv;
  sysv.kind = CleanKind::kSysvSegment;
  sysv.path = "sysv shmid 32769 key 0x00000000";
  sysv.shmid = 32769;
  sysv.owner = "alice";
  sysv.bytes = 1 << 20;
  sysv.age = std::chrono::hours(30);
  sysv.why_safe = "attached by no process";
  plan.items.push_back(sysv);
  plan.total_bytes += sysv.bytes;
  plan.blocking_pids = {7};
  plan.visibility_note = "1 process could not be inspected";
  testing::expect_golden("clean_plan.txt", render_clean_plan(plan, false));
  testing::expect_golden("clean_plan.json", clean_plan_to_json(plan).dump(2) + "\n");
  CleanOptions options;
  options.audit_log = "/var/log/headroom/clean.log";
  CleanResult result;
  result.removed = {plan.items[0]};
  result.freed_bytes = plan.items[0].bytes;
  result.skipped.push_back(
      {plan.items[1].path, "attached again since the plan", plan.items[1].bytes});
  testing::expect_golden("clean_result.txt", render_clean_result(result, plan, options));
  testing::expect_golden("clean_result.json",
                         clean_result_to_json(result, plan, options).dump(2) + "\n");
}

}  // namespace
}  // namespace headroom
