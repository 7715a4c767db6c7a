// The cgroup probe with a SampleMemo (what `watch` keeps between samples): the memory
// cgroup is located from /proc/<pid>/cgroup once and read there, and located again after
// SampleOptions::cgroup_relocate, at once when the mounts change, and at once when its files
// are gone. In a scratch tree with a cgroup2 mount and two cgroups, /a and /b.

#include <gtest/gtest.h>

#include <fstream>

#include "core/fake_syscalls.h"
#include "core/sample/sample.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::ScratchRoot;

constexpr const char* kMountinfo =
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n";

class CgroupMemoTest : public ::testing::Test {
 protected:
  CgroupMemoTest() {
    std::filesystem::create_directories(root_.path() / "proc/self");
    std::ofstream(root_.path() / "proc/self/mountinfo") << kMountinfo;
    make_cgroup("a", 1 << 20);
    make_cgroup("b", 2 << 20);
    move_to("a");
    options_.dirs.clear();
    options_.temp_dir = false;
    options_.shm = false;
  }

  void make_cgroup(const std::string& name, std::uint64_t usage) {
    const auto dir = root_.path() / "sys/fs/cgroup" / name;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "memory.current") << usage << "\n";
    std::ofstream(dir / "memory.max") << "max\n";
    std::ofstream(dir / "memory.events") << "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n";
  }
  void move_to(const std::string& name) {
    std::ofstream(root_.path() / "proc/self/cgroup") << "0::/" << name << "\n";
  }
  void later(std::chrono::seconds seconds) {
    syscalls_.monotonic_ += seconds;
    syscalls_.now_ += seconds;
  }

  /// The cgroup path the sample reports, "" when the probe found none.
  std::string cgroup_path() {
    const Context context = root_.context(syscalls_);
    auto sample = take_sample(context, options_, &memo_);
    EXPECT_TRUE(sample.has_value());
    return sample && sample->cgroup ? sample->cgroup->path : std::string();
  }

  ScratchRoot root_;
  FakeSyscalls syscalls_;
  SampleOptions options_;
  SampleMemo memo_;
};

// Under a limit the probe also reads the working set's page cache from memory.stat.
TEST_F(CgroupMemoTest, ALimitedCgroupReportsItsInactiveFilePages) {
  const auto dir = root_.path() / "sys/fs/cgroup/a";
  std::ofstream(dir / "memory.max") << (64 << 20) << "\n";
  std::ofstream(dir / "memory.stat") << "anon 1048576\nfile 8192\ninactive_file 4096\n";
  const Context context = root_.context(syscalls_);
  auto sample = take_sample(context, options_, &memo_);
  ASSERT_TRUE(sample && sample->cgroup);
  EXPECT_EQ(sample->cgroup->limit_bytes, std::uint64_t{64} << 20);
  EXPECT_EQ(sample->cgroup->inactive_file_bytes, 4096U);
}

TEST_F(CgroupMemoTest, AMovedProcessIsFollowedOnceTheRelocatePeriodHasPassed) {
  EXPECT_EQ(cgroup_path(), "/a");
  move_to("b");
  later(std::chrono::seconds(1));
  EXPECT_EQ(cgroup_path(), "/a");  // read where it was located: no /proc/self/cgroup
  later(options_.cgroup_relocate);
  EXPECT_EQ(cgroup_path(), "/b");
}

TEST_F(CgroupMemoTest, ARemovedCgroupIsLocatedAgainAtOnce) {
  EXPECT_EQ(cgroup_path(), "/a");
  move_to("b");
  std::filesystem::remove_all(root_.path() / "sys/fs/cgroup/a");
  later(std::chrono::seconds(1));
  EXPECT_EQ(cgroup_path(), "/b");
}

TEST_F(CgroupMemoTest, AChangeOfTheMountsLocatesItAgainAtOnce) {
  EXPECT_EQ(cgroup_path(), "/a");
  move_to("b");
  std::ofstream(root_.path() / "proc/self/mountinfo", std::ios::app)
      << "40 22 0:40 / /mnt/data rw,relatime - ext4 /dev/sdb1 rw\n";
  later(std::chrono::seconds(1));
  EXPECT_EQ(cgroup_path(), "/b");
}

TEST_F(CgroupMemoTest, WithoutAMemoEverySampleLocatesIt) {
  const Context context = root_.context(syscalls_);
  auto first = take_sample(context, options_);
  ASSERT_TRUE(first && first->cgroup);
  EXPECT_EQ(first->cgroup->path, "/a");
  move_to("b");
  auto second = take_sample(context, options_);
  ASSERT_TRUE(second && second->cgroup);
  EXPECT_EQ(second->cgroup->path, "/b");
  EXPECT_EQ(second->cgroup->usage_bytes, 2U << 20);
}

}  // namespace
}  // namespace headroom
