// RLIMIT_NPROC's count: the tasks of the examined process's real uid over /proc.
#include "core/kernel/user_tasks.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/fixture_context.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

TEST(UserTasks, CpuListsCountRanges) {
  EXPECT_EQ(parse_cpu_list_count("0-3,8,10-11\n").value(), 7U);
  EXPECT_EQ(parse_cpu_list_count("0").value(), 1U);
  EXPECT_FALSE(parse_cpu_list_count("3-1"));
  EXPECT_FALSE(parse_cpu_list_count(""));
}

TEST(UserTasks, StatusFieldFindsTheKey) {
  EXPECT_EQ(status_field("Name:\tpy\nCpus_allowed_list:\t0-1\n", "Cpus_allowed_list").value(),
            "0-1");
  EXPECT_FALSE(status_field("Name:\tpy\n", "Threads"));
}

TEST(UserTasks, CountsThreadsOfTheSameRealUidOnly) {
  testing::FakeSyscalls syscalls;
  auto user = read_user_tasks(testing::fixture_context("pids_nproc_v2", syscalls));
  ASSERT_TRUE(user) << user.error().message;
  EXPECT_EQ(user->uid, 1000U);
  EXPECT_EQ(user->tasks, 180U);  // 1 + 150 + 28 + 1; root's systemd and dockerd are not counted
  EXPECT_EQ(user->processes, 4U);
  EXPECT_EQ(user->cpus_allowed, 4U);
}

TEST(UserTasks, OnlyTheHostsRootIsExemptNotRootOfAUserNamespace) {
  // kernel/fork.c exempts the initial namespace's root from RLIMIT_NPROC; uid 0 of a rootless
  // container or `unshare -r` is uid 4001 (or 100000) outside, and is held to it.
  testing::ScratchRoot scratch;
  std::filesystem::create_directories(scratch.path() / "proc/42");
  Context context;
  context.root = SysRoot(scratch.path());
  context.pid = "42";
  EXPECT_TRUE(uid_is_host_root(context, 0));  // no uid_map: no user namespaces
  EXPECT_FALSE(uid_is_host_root(context, 1000));
  const auto map = [&](const char* text) {
    std::ofstream(scratch.path() / "proc/42/uid_map") << text;
  };
  map("         0          0 4294967295\n");
  EXPECT_TRUE(uid_is_host_root(context, 0));
  map("         0       4001          1\n");
  EXPECT_FALSE(uid_is_host_root(context, 0));
  map("         0     100000      65536\n");
  EXPECT_FALSE(uid_is_host_root(context, 0));
  map("      1000          0          1\n         0     100000       1000\n");
  EXPECT_TRUE(uid_is_host_root(context, 1000));  // mapped onto the host's root
  EXPECT_FALSE(uid_is_host_root(context, 0));
}

TEST(UserTasks, UnreadableOwnStatusIsAnError) {
  testing::FakeSyscalls syscalls;
  EXPECT_FALSE(read_user_tasks(testing::fixture_context("no_such_scenario", syscalls)));
}

}  // namespace
}  // namespace headroom
