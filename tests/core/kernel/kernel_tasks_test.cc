// kernel.threads-max, kernel.pid_max and the task count of /proc/loadavg.
#include "core/kernel/kernel_tasks.h"

#include <gtest/gtest.h>

#include "core/fixture_context.h"

namespace headroom {
namespace {

TEST(KernelTasks, LoadavgFourthFieldIsTheTaskTotal) {
  auto tasks = parse_loadavg_tasks("4.18 5.18 5.07 5/115 16502\n");
  ASSERT_TRUE(tasks);
  EXPECT_EQ(*tasks, 115U);
}

TEST(KernelTasks, MalformedLoadavgIsAnError) {
  EXPECT_FALSE(parse_loadavg_tasks("4.18 5.18 5.07\n"));
  EXPECT_FALSE(parse_loadavg_tasks("4.18 5.18 5.07 5/x 1\n"));
  EXPECT_FALSE(parse_sysctl_number("lots\n"));
}

TEST(KernelTasks, ReadsTheRecordedTree) {
  testing::FakeSyscalls syscalls;
  auto kernel = read_kernel_tasks(testing::fixture_context("pids_nproc_v2", syscalls));
  ASSERT_TRUE(kernel) << kernel.error().message;
  EXPECT_EQ(kernel->threads_max, 254389U);
  EXPECT_EQ(kernel->pid_max, 4194304U);
  EXPECT_EQ(kernel->tasks, 612U);
}

TEST(KernelTasks, MissingFileNamesIt) {
  testing::FakeSyscalls syscalls;
  // bare_host records no /proc/sys/kernel/threads-max.
  auto kernel = read_kernel_tasks(testing::fixture_context("bare_host", syscalls));
  ASSERT_FALSE(kernel);
  EXPECT_NE(kernel.error().message.find("threads-max"), std::string::npos)
      << kernel.error().message;
}

}  // namespace
}  // namespace headroom
