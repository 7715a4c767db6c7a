#include <gtest/gtest.h>

#include "core/kernel/proc_pid_files.h"
#include "core/kernel/proc_pid_status.h"

namespace headroom {
namespace {

using namespace std::string_view_literals;  // the \0 inside count, and no length to get wrong

TEST(ParseProcStatus, ReadsNameParentMemoryAndSharedMemory) {
  const auto status = parse_proc_status(
      "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t4200\n"
      "Uid:\t1000\t1000\t1000\t1000\nVmRSS:\t  614400 kB\nRssShmem:\t   98304 kB\nThreads:\t7\n");
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ(status->name, "python3");
  EXPECT_EQ(status->pid, 4242);
  EXPECT_EQ(status->ppid, 4200);
  EXPECT_EQ(status->uid, 1000u);
  EXPECT_EQ(status->rss_bytes, 614400u * 1024);
  EXPECT_EQ(status->rss_shmem_bytes, 98304u * 1024);
  EXPECT_EQ(status->threads, 7u);
}

TEST(ParseProcStatus, AKernelThreadHasNoMemoryLines) {
  const auto status = parse_proc_status("Name:\tkworker/0:1\nPid:\t17\nPPid:\t2\n");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->rss_bytes, 0u);
  EXPECT_FALSE(status->rss_shmem_bytes);
}

TEST(ParseProcStatus, RejectsTextWithoutPid) { EXPECT_FALSE(parse_proc_status("Name:\tx\n")); }

TEST(ParseEnviron, KeepsOnlyTheWantedVariables) {
  const std::string_view text = "PATH=/bin\0RANK=3\0SECRET=x\0LOCAL_RANK=1\0"sv;
  const auto env = parse_environ(text, {"RANK", "LOCAL_RANK"});
  EXPECT_EQ(env.size(), 2u);
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
}

TEST(SplitNul, SplitsArgv) {
  EXPECT_EQ(split_nul("python3\0-u\0train.py\0"sv),
            (std::vector<std::string>{"python3", "-u", "train.py"}));
}

}  // namespace
}  // namespace headroom
