// Issue 21, item 1: one hung mount must not freeze the sample. statvfs of one
// filesystem blocks (as on a dead NFS server) until the test releases it.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "core/sample/sample.h"
#include "core/syscalls.h"

namespace headroom {
namespace {

/// Real clocks; statvfs of paths under /proc blocks until release(), others answer at once.
class HangingSyscalls final : public Syscalls {
 public:
  [[nodiscard]] Result<FsStats> statvfs(const std::filesystem::path& path) const override {
    if (path.string().rfind("/proc", 0) == 0) {
      std::unique_lock lock(mutex_);
      ++blocked_calls_;
      released_.wait(lock, [this] { return released_flag_; });
    }
    return FsStats{1000, 500, 400, 10, 5, false};
  }
  [[nodiscard]] std::chrono::system_clock::time_point now() const override {
    return std::chrono::system_clock::now();
  }
  [[nodiscard]] std::chrono::steady_clock::time_point monotonic() const override {
    return std::chrono::steady_clock::now();
  }
  [[nodiscard]] Result<Limit> open_files_limit() const override { return Limit{1024, 1024}; }
  [[nodiscard]] uid_t effective_uid() const override { return 0; }
  [[nodiscard]] LeaseAnswer write_lease(int /*fd*/) const override { return LeaseAnswer::kUnknown; }
  [[nodiscard]] LeaseAnswer read_lease(int /*fd*/) const override { return LeaseAnswer::kUnknown; }

  void release() {
    {
      std::lock_guard lock(mutex_);
      released_flag_ = true;
    }
    released_.notify_all();
  }
  [[nodiscard]] int blocked_calls() const {
    std::lock_guard lock(mutex_);
    return blocked_calls_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable released_;
  mutable int blocked_calls_ = 0;
  bool released_flag_ = false;
};

const FilesystemSample& find(const Sample& sample, const std::string& path) {
  for (const FilesystemSample& filesystem : sample.filesystems) {
    if (filesystem.path == path) return filesystem;
  }
  throw std::runtime_error("no " + path);
}

TEST(SampleFilesystems, AHungMountIsStuckAndEverythingElseIsMeasured) {
  HangingSyscalls syscalls;
  const Context context{SysRoot("/"), &syscalls, {}, "/", "self"};
  SampleOptions options;
  options.dirs = {"/proc", "/"};
  options.temp_dir = false;
  options.shm = false;
  options.shm_stale = false;
  options.probe_timeout = std::chrono::milliseconds(300);
  SampleMemo memo;

  auto started = std::chrono::steady_clock::now();
  auto first = take_sample(context, options, &memo);
  ASSERT_TRUE(first) << first.error().message;
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, std::chrono::milliseconds(290));
  EXPECT_LT(took, std::chrono::seconds(2));
  const FilesystemSample& hung = find(*first, "/proc");
  EXPECT_TRUE(hung.stuck);
  EXPECT_FALSE(hung.ok);
  EXPECT_EQ(hung.mountpoint, "/proc");
  EXPECT_NE(hung.why().find("has not answered"), std::string::npos) << hung.why();
  EXPECT_TRUE(find(*first, "/").ok);
  EXPECT_TRUE(first->memory.has_value());  // the other probes went on

  // The next sample does not ask the hung mount again, nor wait for it.
  started = std::chrono::steady_clock::now();
  auto second = take_sample(context, options, &memo);
  ASSERT_TRUE(second);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(250));
  EXPECT_TRUE(find(*second, "/proc").stuck);
  EXPECT_EQ(syscalls.blocked_calls(), 1);

  // It answers at last: measured again.
  syscalls.release();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto third = take_sample(context, options, &memo);
  ASSERT_TRUE(third);
  EXPECT_TRUE(find(*third, "/proc").ok);
  EXPECT_FALSE(find(*third, "/proc").stuck);
  EXPECT_EQ(memo.probers.size(), 2u);  // "/" and "/proc", each on its own thread
}

/// Real statfs, and the thread each one ran on.
class RecordingSyscalls final : public Syscalls {
 public:
  [[nodiscard]] Result<FsStats> statvfs(const std::filesystem::path& path) const override {
    {
      std::lock_guard lock(mutex_);
      threads_.insert(std::this_thread::get_id());
      ++calls_;
    }
    return real_.statvfs(path);
  }
  [[nodiscard]] std::chrono::system_clock::time_point now() const override { return real_.now(); }
  [[nodiscard]] std::chrono::steady_clock::time_point monotonic() const override {
    return real_.monotonic();
  }
  [[nodiscard]] Result<Limit> open_files_limit() const override { return real_.open_files_limit(); }
  [[nodiscard]] uid_t effective_uid() const override { return real_.effective_uid(); }
  [[nodiscard]] LeaseAnswer write_lease(int fd) const override { return real_.write_lease(fd); }
  [[nodiscard]] LeaseAnswer read_lease(int fd) const override { return real_.read_lease(fd); }
  [[nodiscard]] std::size_t threads() const {
    std::lock_guard lock(mutex_);
    return threads_.size();
  }
  [[nodiscard]] int calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  RealSyscalls real_;
  mutable std::mutex mutex_;
  mutable std::set<std::thread::id> threads_;
  mutable int calls_ = 0;
};

TEST(SampleFilesystems, ALongWatchStartsOneThreadPerFilesystemNotOnePerSample) {
  RecordingSyscalls syscalls;
  const Context context{SysRoot("/"), &syscalls, {}, "/", "self"};
  SampleOptions options;
  options.dirs = {"/"};
  options.temp_dir = false;
  options.shm = false;
  options.shm_stale = false;
  SampleMemo memo;
  for (int round = 0; round < 5; ++round) {
    auto sample = take_sample(context, options, &memo);
    ASSERT_TRUE(sample) << sample.error().message;
    ASSERT_TRUE(find(*sample, "/").ok) << find(*sample, "/").why();
  }
  EXPECT_EQ(syscalls.calls(), 5);     // measured afresh by every sample
  EXPECT_EQ(syscalls.threads(), 1u);  // on the same thread

  // A config that no longer watches it gives the thread back; watching it again starts one.
  options.dirs = {"/proc"};
  ASSERT_TRUE(take_sample(context, options, &memo));
  EXPECT_EQ(memo.probers.size(), 1u);
  EXPECT_EQ(memo.probers.count("/"), 0u);
}

TEST(WatchedPaths, ATrailingSlashIsTheSameDir) {
  SampleOptions options;
  options.dirs = {"/data/ckpt", "/data/ckpt/", "/data//ckpt/."};
  options.mounts = {"/data/"};
  options.temp_dir = false;
  options.shm = false;
  const Context context{SysRoot("/"), nullptr, {}, "/", "self"};
  const auto paths = watched_paths(context, options);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0].path, "/data");
  EXPECT_TRUE(paths[0].expect_mount);
  EXPECT_EQ(paths[1].path, "/data/ckpt");
  EXPECT_FALSE(paths[1].expect_mount);
}

}  // namespace
}  // namespace headroom
