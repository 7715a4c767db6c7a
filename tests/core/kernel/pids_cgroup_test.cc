// The pids cgroup on recorded trees: a Docker container seeing its own cgroup
// as the v1 mount's root, and a v2 session scope whose slice sets the limit.
#include "core/kernel/pids_cgroup.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::fixture_context;

TEST(PidsCgroup, DockerV1ContainerSeesItsOwnLimitAtTheMountRoot) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("pids_docker_v1", syscalls);
  auto cgroup = read_pids_cgroup(context);
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  EXPECT_EQ(cgroup->version, CgroupVersion::kV1);
  EXPECT_EQ(cgroup->path, "/docker/3f2a9c1b7d4e");
  EXPECT_EQ(context.root.display(cgroup->directory), "/sys/fs/cgroup/pids");
  EXPECT_EQ(cgroup->current, 12U);
  ASSERT_TRUE(cgroup->limit);
  EXPECT_EQ(*cgroup->limit, 64U);
  EXPECT_EQ(cgroup->room(), 52U);
}

TEST(PidsCgroup, V2UnlimitedScopeTakesTheSlicesLimit) {
  FakeSyscalls syscalls;
  const Context context = fixture_context("pids_nproc_v2", syscalls);
  auto cgroup = read_pids_cgroup(context);
  ASSERT_TRUE(cgroup) << cgroup.error().message;
  EXPECT_EQ(cgroup->version, CgroupVersion::kV2);
  EXPECT_EQ(cgroup->current, 5U);
  ASSERT_TRUE(cgroup->limit);
  EXPECT_EQ(*cgroup->limit, 10813U);
  EXPECT_EQ(cgroup->limit_current, 190U);
  EXPECT_EQ(context.root.display(cgroup->limit_directory),
            "/sys/fs/cgroup/user.slice/user-1000.slice");
  EXPECT_EQ(cgroup->room(), 10623U);
}

TEST(PidsCgroup, NoPidsControllerIsNotFound) {
  FakeSyscalls syscalls;
  // A missing tree (or a vanished pid) is an error value, never a crash.
  const Context context = fixture_context("no_such_scenario", syscalls);
  EXPECT_FALSE(read_pids_cgroup(context));
}

}  // namespace
}  // namespace headroom
