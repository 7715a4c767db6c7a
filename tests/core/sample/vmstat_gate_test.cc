// vmstat's OOM-kill counter is read again only after the kernel has logged something
// (KernelLogWatch): every OOM kill logs "Killed process". In a scratch tree, a FIFO at
// dev/kmsg stands for the live device: a line written to it is a new record.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "core/fake_syscalls.h"
#include "core/kernel/kmsg.h"
#include "core/sample/sample.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::ScratchRoot;

class VmstatGateTest : public ::testing::Test {
 protected:
  VmstatGateTest() {
    std::filesystem::create_directories(root_.path() / "proc");
    std::filesystem::create_directories(root_.path() / "dev");
    set_oom_kills(3);
    options_.dirs.clear();
    options_.temp_dir = false;
    options_.shm = false;
  }
  ~VmstatGateTest() override {
    if (writer_ >= 0) ::close(writer_);
  }

  void set_oom_kills(int count) {
    std::ofstream(root_.path() / "proc/vmstat")
        << "nr_free_pages 3503203\noom_kill " << count << "\nnr_unstable 0\n";
  }

  /// dev/kmsg as a FIFO with a writer held open: the log, quiet until log() writes to it.
  void make_kmsg_fifo() {
    const auto path = root_.path() / "dev/kmsg";
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);  // lets the writer open
    writer_ = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    ::close(reader);
    ASSERT_GE(writer_, 0);
  }

  void log(std::string_view record) {
    ASSERT_EQ(::write(writer_, record.data(), record.size()), static_cast<ssize_t>(record.size()));
  }

  std::optional<std::uint64_t> oom_kills(SampleMemo* memo) {
    const Context context = root_.context(syscalls_);
    auto sample = take_sample(context, options_, memo);
    EXPECT_TRUE(sample.has_value());
    return sample ? sample->system_oom_kills : std::nullopt;
  }

  ScratchRoot root_;
  FakeSyscalls syscalls_;
  SampleOptions options_;
  int writer_ = -1;
};

TEST_F(VmstatGateTest, TheCounterIsReadAgainOnlyAfterTheKernelLogged) {
  make_kmsg_fifo();
  SampleMemo memo;
  EXPECT_EQ(oom_kills(&memo), 3U);
  set_oom_kills(4);
  EXPECT_EQ(oom_kills(&memo), 3U);  // the log is quiet: vmstat is not read
  log("3,812,9000000,-;Out of memory: Killed process 4242 (python3)\n");
  EXPECT_EQ(oom_kills(&memo), 4U);
  set_oom_kills(5);
  EXPECT_EQ(oom_kills(&memo), 4U);  // the record was read: quiet again
  log("6,813,9100000,-;eth0: link up\n");
  EXPECT_EQ(oom_kills(&memo), 5U);
  EXPECT_EQ(oom_kills(nullptr), 5U);  // a single sample reads it
}

TEST_F(VmstatGateTest, WithoutALogToWatchEverySampleReadsTheCounter) {
  SampleMemo missing;  // no dev/kmsg at all
  EXPECT_EQ(oom_kills(&missing), 3U);
  set_oom_kills(4);
  EXPECT_EQ(oom_kills(&missing), 4U);
  std::ofstream(root_.path() / "dev/kmsg") << "6,1,1,-;a regular file, as fixtures have\n";
  SampleMemo regular;
  EXPECT_EQ(oom_kills(&regular), 4U);
  set_oom_kills(5);
  EXPECT_EQ(oom_kills(&regular), 5U);
}

TEST(KernelLogWatch, AFifoWhoseWriterLeftCannotTell) {
  ScratchRoot root;
  std::filesystem::create_directories(root.path() / "dev");
  const auto path = root.path() / "dev/kmsg";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
  FakeSyscalls syscalls;
  const Context context = root.context(syscalls);
  KernelLogWatch watch;
  EXPECT_TRUE(watch.logged_since_last(context));  // the first call cannot tell
  EXPECT_FALSE(watch.logged_since_last(context));
  ::close(writer);
  EXPECT_TRUE(watch.logged_since_last(context));
  EXPECT_TRUE(watch.logged_since_last(context));
  ::close(reader);
}

}  // namespace
}  // namespace headroom
