// The golden text and JSON of `headroom prune` (tests/golden/prune.*): a series of five step
// checkpoints planned by the real planner with --keep-last 2: the oldest goes, one is held by
// a process, one named by a symlink, the two newest kept.

#include "core/prune/render.h"

#include <gtest/gtest.h>

#include "core/golden.h"
#include "core/series/checkpoint_name.h"
#include "core/series/retention.h"

namespace headroom {
namespace {

constexpr std::int64_t kNowNs = 1'700'000'000'000'000'000;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

Checkpoint checkpoint(const std::string& name, std::int64_t hours_ago, std::uint64_t bytes) {
  Checkpoint item;
  item.name = name;
  item.parsed = parse_checkpoint_name(name);
  item.stat.kind = walk::FileKind::kFile;
  item.stat.disk_bytes = item.stat.apparent_bytes = bytes;
  item.stat.mtime_ns = item.stat.ctime_ns = kNowNs - hours_ago * 3'600'000'000'000;
  item.tally.disk_bytes = item.tally.apparent_bytes = bytes;
  item.tally.files = 1;
  item.tally.newest_mtime_ns = item.stat.mtime_ns;
  return item;
}

TEST(PruneRender, GoldenPlan) {
  PruneResult result;
  result.scan.dir = "/ckpt/run7";
  for (const auto& [name, hours_ago] :
       {std::pair{"step_500.pt", 50}, std::pair{"step_1000.pt", 40}, std::pair{"step_2000.pt", 30},
        std::pair{"step_3000.pt", 20}, std::pair{"step_4000.pt", 10}}) {
    result.scan.checkpoints.push_back(checkpoint(name, hours_ago, 512 * kMiB));
  }
  result.scan.checkpoints[1].holders.push_back({4242, "python3", "alice", "mmap"});
  result.scan.checkpoints[2].named_by = "symlink 'best.pt' points to it";
  result.policy.keep_last = 2;
  auto plan = plan_retention(result.scan.checkpoints, result.policy);
  ASSERT_TRUE(plan) << plan.error().message;
  result.plan = *plan;
  result.now_ns = kNowNs;
  testing::expect_golden("prune.txt", render_prune_text(result, TextStyle{}));
  testing::expect_golden("prune.json", prune_to_json(result).dump(2) + "\n");
}

}  // namespace
}  // namespace headroom
