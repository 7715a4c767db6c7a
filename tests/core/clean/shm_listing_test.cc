// One listing of /dev/shm for check, clean and watch (clean/shm_survey.h): the entries
// directly in it, or every regular file below it old enough to be stale; a symlink is
// never followed, and a nested file is judged by the same rule as a top-level one.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>

#include "core/clean/shm_survey.h"
#include "core/fake_syscalls.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::ScratchRoot;

std::set<std::string> names(const std::vector<ShmEntry>& entries) {
  std::set<std::string> out;
  for (const ShmEntry& entry : entries) out.insert(entry.name);
  return out;
}

class ShmListingTest : public ::testing::Test {
 protected:
  ShmListingTest() {
    const auto shm = root_.path() / "dev/shm";
    std::filesystem::create_directories(shm / "impi/deeper");
    std::ofstream(shm / "nccl-top") << "x";
    std::ofstream(shm / "impi/shm-seg") << "y";
    std::ofstream(shm / "impi/deeper/seg2") << "z";
    std::filesystem::create_directories(root_.path() / "elsewhere");
    std::ofstream(root_.path() / "elsewhere/not-shm") << "w";
    std::filesystem::create_directory_symlink(root_.path() / "elsewhere", shm / "link");
    context_ = root_.context(syscalls_);
  }

  ScratchRoot root_;
  FakeSyscalls syscalls_;
  Context context_;
};

TEST_F(ShmListingTest, CheckAndCleanSeeTheTopLevel) {
  FileId dir;
  auto entries = list_shm(context_, ShmListing{}, &dir);
  ASSERT_TRUE(entries) << entries.error().message;
  EXPECT_EQ(names(*entries), (std::set<std::string>{"impi", "link", "nccl-top"}));
  EXPECT_NE(dir.inode, 0U);
}

TEST_F(ShmListingTest, WatchSeesEveryRegularFileBelowButNotThroughALink) {
  ShmListing listing;
  listing.recursive = true;
  listing.regular_only = true;
  auto entries = list_shm(context_, listing);
  ASSERT_TRUE(entries) << entries.error().message;
  EXPECT_EQ(names(*entries),
            (std::set<std::string>{"impi/deeper/seg2", "impi/shm-seg", "nccl-top"}));
}

TEST_F(ShmListingTest, FreshFilesAreNotCandidates) {
  ShmListing listing;
  listing.recursive = true;
  listing.regular_only = true;
  listing.min_age = std::chrono::seconds(60);
  listing.now = std::chrono::system_clock::now();
  auto fresh = list_shm(context_, listing);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->empty());
  listing.now += std::chrono::hours(1);
  auto old = list_shm(context_, listing);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->size(), 3U);
}

TEST_F(ShmListingTest, ANestedFileIsJudgedByTheSameRule) {
  ShmListing listing;
  listing.recursive = true;
  listing.regular_only = true;
  auto entries = list_shm(context_, listing);
  ASSERT_TRUE(entries);
  // No /proc in this root: nobody is seen, and the kernel (the fake) grants the lease.
  InUseIndex index;
  Visibility visibility;
  visibility.kernel = &syscalls_;
  judge_shm_use(context_, index, visibility, LeaseWhen::kAlways, *entries);
  for (const ShmEntry& entry : *entries) {
    EXPECT_EQ(entry.use, Use::kUnused) << entry.name << ": " << entry.use_why;
  }
}

}  // namespace
}  // namespace headroom
