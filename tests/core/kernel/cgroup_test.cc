#include "core/kernel/cgroup.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

TEST(ParseProcCgroup, ReadsHybridLines) {
  auto lines = parse_proc_cgroup(
      "11:cpu,cpuacct:/docker/abc\n4:memory:/process_api/e40\n"
      "1:name=systemd:/\n0::/user.slice:odd:name\n");
  ASSERT_TRUE(lines) << lines.error().message;
  ASSERT_EQ(lines->size(), 4U);
  EXPECT_EQ((*lines)[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ((*lines)[1].path, "/process_api/e40");
  EXPECT_EQ((*lines)[3].hierarchy_id, 0);
  EXPECT_TRUE((*lines)[3].controllers.empty());
  EXPECT_EQ((*lines)[3].path, "/user.slice:odd:name");  // ':' in a path stays
  EXPECT_FALSE(parse_proc_cgroup("memory:/x\n"));
}

TEST(ParseCgroupLimit, UnlimitedForms) {
  EXPECT_EQ(*parse_cgroup_limit("max\n"), std::nullopt);
  EXPECT_EQ(*parse_cgroup_limit("9223372036854771712\n"), std::nullopt);  // v1, 4 KiB pages
  EXPECT_EQ(*parse_cgroup_limit("9223372036854710272\n"), std::nullopt);  // v1, 64 KiB pages
  EXPECT_EQ(*parse_cgroup_limit("67108864\n"), 67108864U);
  EXPECT_FALSE(parse_cgroup_limit("lots"));
}

TEST(ParseFlatKeyed, ReadsEvents) {
  auto events = parse_flat_keyed("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\n");
  ASSERT_TRUE(events);
  EXPECT_EQ(events->at("oom_kill"), 2U);
  EXPECT_FALSE(parse_flat_keyed("oom_kill\n"));
}

TEST(FlatKeyedValue, FindsOneKeyByItsWholeName) {
  const char* events = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 3\n";
  EXPECT_EQ(flat_keyed_value(events, "oom_kill"), 3U);
  EXPECT_EQ(flat_keyed_value(events, "oom"), 2U);  // not oom_kill's line
  EXPECT_FALSE(flat_keyed_value(events, "oom_group_kill"));
  EXPECT_FALSE(flat_keyed_value("oom_kill lots\n", "oom_kill"));
  EXPECT_EQ(flat_keyed_value("inactive_file 4096\ntotal_inactive_file 8192\n", "inactive_file"),
            4096U);
}

TEST(ReadMemoryCgroup, BareHostHybridUsesV1Memory) {
  FakeSyscalls syscalls;
  auto cgroup = read_memory_cgroup(fixture_context("bare_host", syscalls));
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  EXPECT_EQ(cgroup->version, CgroupVersion::kV1);
  EXPECT_EQ(cgroup->path.rfind("/process_api/", 0), 0U) << cgroup->path;
  EXPECT_FALSE(cgroup->limit_bytes);  // 9223372036854771712
  EXPECT_FALSE(cgroup->effective_limit_bytes);
  EXPECT_EQ(cgroup->oom_kills, 0U);
}

TEST(ReadMemoryCgroup, DockerV1SeesItsCgroupAsTheMountRoot) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("docker_64m_shm", syscalls);
  auto cgroup = read_memory_cgroup(context);
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  EXPECT_EQ(cgroup->version, CgroupVersion::kV1);
  EXPECT_EQ(context.root.display(cgroup->directory), "/sys/fs/cgroup/memory");
  EXPECT_EQ(cgroup->effective_limit_bytes, 8ULL << 30);
  EXPECT_EQ(cgroup->usage_bytes, 1288490188U);
  EXPECT_EQ(cgroup->oom_kills, 2U);
  EXPECT_EQ(cgroup->headroom_bytes(), (8ULL << 30) - 1288490188U);
}

TEST(ReadMemoryCgroup, SlurmLimitOnAnAncestorIsEffective) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("cgroup_v1", syscalls);
  auto cgroup = read_memory_cgroup(context);
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  EXPECT_EQ(cgroup->path, "/slurm/uid_1000/job_4242/step_0/task_0");
  EXPECT_FALSE(cgroup->limit_bytes);  // the task itself is unlimited
  EXPECT_EQ(cgroup->effective_limit_bytes, 16ULL << 30);
  EXPECT_EQ(context.root.display(cgroup->effective_limit_directory),
            "/sys/fs/cgroup/memory/slurm/uid_1000/job_4242");
  EXPECT_EQ(cgroup->oom_kills, 3U);
}

TEST(ReadMemoryCgroup, V2InACgroupNamespace) {
  FakeSyscalls syscalls;
  auto cgroup = read_memory_cgroup(fixture_context("cgroup_v2", syscalls));
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  EXPECT_EQ(cgroup->version, CgroupVersion::kV2);
  EXPECT_EQ(cgroup->path, "/");
  EXPECT_EQ(cgroup->effective_limit_bytes, 2ULL << 30);
  EXPECT_EQ(cgroup->peak_bytes, 2ULL << 30);
  EXPECT_EQ(cgroup->swap_limit_bytes, 0U);
  EXPECT_EQ(cgroup->oom_kills, 1U);
  EXPECT_EQ(cgroup->oom_events, 1U);
}

TEST(ReadMemoryCgroup, WithoutDetailsTheSampledNumbersAreTheSame) {
  FakeSyscalls syscalls;
  for (const char* scenario : {"cgroup_v2", "cgroup_v1", "docker_64m_shm"}) {
    const Context context = fixture_context(scenario, syscalls);
    auto full = read_memory_cgroup(context);
    auto lean = read_memory_cgroup(context, "self", nullptr, false);
    ASSERT_TRUE(full && lean) << scenario;
    EXPECT_EQ(lean->effective_limit_bytes, full->effective_limit_bytes) << scenario;
    EXPECT_EQ(lean->usage_bytes, full->usage_bytes) << scenario;
    EXPECT_EQ(lean->oom_kills, full->oom_kills) << scenario;
    EXPECT_FALSE(lean->peak_bytes) << scenario;
    EXPECT_FALSE(lean->swap_limit_bytes) << scenario;
  }
}

TEST(ReadMemoryCgroup, VanishedPidIsNotFound) {
  FakeSyscalls syscalls;
  auto cgroup = read_memory_cgroup(fixture_context("bare_host", syscalls), "999999");
  ASSERT_FALSE(cgroup);
  EXPECT_EQ(cgroup.error().code, Error::Code::kNotFound);
}

}  // namespace
}  // namespace headroom
