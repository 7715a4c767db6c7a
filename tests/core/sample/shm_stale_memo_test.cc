// The stale-/dev/shm probe with a SampleMemo (what `watch` keeps between
// samples): the /proc scan is reused while the candidate files are the same,
// and reruns when a file is new or has grown, or when the last scan is older
// than shm_stale_rescan. On a writable copy of tests/fixtures/shm_stale_mixed,
// where pid 4100 holds torch_4100_1234567_0 by an fd.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "core/fake_syscalls.h"
#include "core/sample/sample.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::ScratchRoot;

class ShmStaleMemoTest : public ::testing::Test {
 protected:
  ShmStaleMemoTest() : root_("shm_stale_mixed") {
    // The copied files are minutes old at most; an hour later they are all old enough.
    syscalls_.now_ = std::chrono::system_clock::now() + std::chrono::hours(1);
    options_.dirs.clear();
    options_.temp_dir = false;
  }

  std::uint64_t stale_bytes() {
    const Context context = root_.context(syscalls_);
    auto sample = take_sample(context, options_, &memo_);
    EXPECT_TRUE(sample.has_value());
    EXPECT_TRUE(sample->shm_stale_bytes.has_value());
    return sample->shm_stale_bytes.value_or(0);
  }

  std::uint64_t allocated(std::string_view name) const {
    struct stat info {};
    const auto path = root_.path() / "dev/shm" / std::string(name);
    EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
    return static_cast<std::uint64_t>(info.st_blocks) * 512;
  }

  void later(std::chrono::seconds seconds) {
    syscalls_.monotonic_ += seconds;
    syscalls_.now_ += seconds;
  }

  ScratchRoot root_;
  FakeSyscalls syscalls_;
  SampleOptions options_;
  SampleMemo memo_;
};

TEST_F(ShmStaleMemoTest, ReusesTheScanWhileTheFilesAreUnchangedAndRescansOnSchedule) {
  const std::uint64_t before = stale_bytes();
  ASSERT_GT(before, 0U);
  // The holder exits. Within the rescan interval the earlier verdicts stand
  // (no /proc walk); once the interval has passed, the file is counted.
  std::filesystem::remove_all(root_.path() / "proc/4100");
  later(std::chrono::seconds(30));
  EXPECT_EQ(stale_bytes(), before);
  later(std::chrono::seconds(31));
  EXPECT_EQ(stale_bytes(), before + allocated("torch_4100_1234567_0"));
}

TEST_F(ShmStaleMemoTest, ANewFileIsScannedAtOnce) {
  const std::uint64_t before = stale_bytes();
  std::filesystem::remove_all(root_.path() / "proc/4100");  // seen only by a new scan
  std::ofstream(root_.path() / "dev/shm/nccl-new-segment") << std::string(8192, 'x');
  later(std::chrono::seconds(1));
  EXPECT_EQ(stale_bytes(),
            before + allocated("nccl-new-segment") + allocated("torch_4100_1234567_0"));
}

TEST_F(ShmStaleMemoTest, AGrownFileIsScannedAtOnce) {
  const std::uint64_t notes = allocated("notes.txt");
  const std::uint64_t before = stale_bytes();
  std::filesystem::remove_all(root_.path() / "proc/4100");  // seen only by a new scan
  std::ofstream(root_.path() / "dev/shm/notes.txt", std::ios::app) << std::string(65536, 'y');
  later(std::chrono::seconds(1));
  EXPECT_EQ(stale_bytes(),
            before - notes + allocated("notes.txt") + allocated("torch_4100_1234567_0"));
}

TEST_F(ShmStaleMemoTest, ARemovedFileLeavesTheTotalWithoutAScan) {
  const std::uint64_t before = stale_bytes();
  std::filesystem::remove(root_.path() / "dev/shm/nccl-a1b2c3");
  const std::uint64_t removed = before - stale_bytes();
  // The file is gone, so its bytes are; nothing else moved.
  EXPECT_GT(removed, 0U);
}

TEST_F(ShmStaleMemoTest, WithoutAMemoEverySampleScans) {
  const Context context = root_.context(syscalls_);
  auto first = take_sample(context, options_);
  std::filesystem::remove_all(root_.path() / "proc/4100");
  auto second = take_sample(context, options_);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(*second->shm_stale_bytes, *first->shm_stale_bytes + allocated("torch_4100_1234567_0"));
}

TEST(ShmStaleEmpty, FilesThatHoldNoSpaceAreNotWorthAScan) {
  // A 0-byte segment adds nothing to either total, stale or not: no /proc scan for it
  // (here /proc cannot be scanned at all, so a scan would fail the probe). One that grows
  // is a candidate again.
  ScratchRoot root;
  std::filesystem::create_directories(root.path() / "dev/shm");
  std::ofstream(root.path() / "dev/shm/torch_11361_1930847473_1");
  FakeSyscalls syscalls;
  syscalls.now_ = std::chrono::system_clock::now() + std::chrono::hours(1);
  SampleOptions options;
  options.dirs.clear();
  options.temp_dir = false;
  SampleMemo memo;
  const Context context = root.context(syscalls);
  auto sample = take_sample(context, options, &memo);
  ASSERT_TRUE(sample);
  const ProbeStatus* probe = sample->probe("shm_stale");
  ASSERT_NE(probe, nullptr);
  EXPECT_TRUE(probe->success) << (probe->error ? probe->error->message : "");
  EXPECT_EQ(sample->shm_stale_bytes, 0U);
  EXPECT_EQ(sample->shm_unknown_bytes, 0U);

  std::ofstream(root.path() / "dev/shm/torch_11361_1930847473_1") << std::string(8192, 'x');
  syscalls.monotonic_ += std::chrono::seconds(1);
  auto grown = take_sample(context, options, &memo);
  ASSERT_TRUE(grown);
  probe = grown->probe("shm_stale");
  ASSERT_NE(probe, nullptr);
  EXPECT_FALSE(probe->success);  // judged now: the scan of a /proc that is not there fails
}

}  // namespace
}  // namespace headroom
