// Issue 21, item 1: one hung mount must not freeze the sample. statvfs of one
// filesystem blocks (as on a dead NFS server) until the test releases it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "core/kernel/mountinfo.h"
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

/// Real statfs, and the thread each one ran on; with `no_symlinks`, the lookup without
/// symlinks too (a seam without it says nullopt).
class RecordingSyscalls final : public Syscalls {
 public:
  explicit RecordingSyscalls(bool no_symlinks = false) : no_symlinks_(no_symlinks) {}
  [[nodiscard]] Result<FsStats> statvfs(const std::filesystem::path& path) const override {
    {
      std::lock_guard lock(mutex_);
      threads_.insert(std::this_thread::get_id());
      ++calls_;
    }
    return real_.statvfs(path);
  }
  [[nodiscard]] std::optional<FsStats> statvfs_no_symlinks(
      const std::filesystem::path& path) const override {
    if (!no_symlinks_) return std::nullopt;
    {
      std::lock_guard lock(mutex_);
      here_threads_.insert(std::this_thread::get_id());
    }
    return real_.statvfs_no_symlinks(path);
  }
  [[nodiscard]] std::set<std::thread::id> here_threads() const {
    std::lock_guard lock(mutex_);
    return here_threads_;
  }
  [[nodiscard]] std::set<std::thread::id> statvfs_threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
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
  bool no_symlinks_;
  mutable std::mutex mutex_;
  mutable std::set<std::thread::id> threads_;
  mutable std::set<std::thread::id> here_threads_;
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

// A dir whose lookup stays on local filesystems and crosses no symlink is measured on the
// sampling thread, with the answer its thread would give; /proc (not a local type) and a
// path through a symlink still go to a thread of their own.
TEST(SampleFilesystems, ALocalPathIsMeasuredOnTheSamplingThread) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("statfs-here-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "real");
  std::filesystem::create_directory_symlink("real", dir / "link");
  const Context live{SysRoot("/"), nullptr, {}, "/", "self"};
  auto table = read_mountinfo(live);
  ASSERT_TRUE(table) << table.error().message;
  if (!lookup_stays_local(*table, dir)) {
    GTEST_SKIP() << dir << " is not on a local filesystem type here";
  }
  SampleOptions options;
  options.dirs = {dir / "real", "/proc"};
  options.temp_dir = false;
  options.shm = false;
  options.shm_stale = false;

  RecordingSyscalls syscalls(true);
  const Context context{SysRoot("/"), &syscalls, {}, "/", "self"};
  SampleMemo memo;
  auto sample = take_sample(context, options, &memo);
  ASSERT_TRUE(sample) << sample.error().message;
  EXPECT_EQ(syscalls.here_threads(), std::set{std::this_thread::get_id()});
  EXPECT_EQ(syscalls.calls(), 1);  // /proc only, on its thread
  EXPECT_EQ(syscalls.statvfs_threads().count(std::this_thread::get_id()), 0u);
  EXPECT_EQ(memo.probers.size(), 1u);
  EXPECT_EQ(memo.probers.count("/proc"), 1u);

  // The same answer as a thread resolving the path gives.
  RecordingSyscalls threaded;
  const Context resolving{SysRoot("/"), &threaded, {}, "/", "self"};
  auto reference = take_sample(resolving, options, nullptr);
  ASSERT_TRUE(reference);
  EXPECT_EQ(threaded.calls(), 2);
  for (const auto* path : {"real", "/proc"}) {
    const std::string name = path[0] == '/' ? path : (dir / path).string();
    const FilesystemSample& here = find(*sample, name);
    const FilesystemSample& there = find(*reference, name);
    ASSERT_TRUE(here.ok && there.ok) << here.why() << there.why();
    EXPECT_EQ(here.total_bytes, there.total_bytes);
    EXPECT_EQ(here.mountpoint, there.mountpoint);
    EXPECT_EQ(here.fstype, there.fstype);
    EXPECT_EQ(here.device, there.device);
    EXPECT_EQ(here.is_mount, there.is_mount);
  }

  // Through a symlink: resolved on the group's thread, as before.
  options.dirs = {dir / "link"};
  RecordingSyscalls linked(true);
  const Context through{SysRoot("/"), &linked, {}, "/", "self"};
  SampleMemo linked_memo;
  auto via_link = take_sample(through, options, &linked_memo);
  ASSERT_TRUE(via_link);
  EXPECT_TRUE(find(*via_link, (dir / "link").string()).ok);
  EXPECT_EQ(linked.calls(), 1);
  EXPECT_EQ(linked.statvfs_threads().count(std::this_thread::get_id()), 0u);
  EXPECT_EQ(linked_memo.probers.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(RealSyscalls, StatvfsWithoutSymlinksRefusesASymlinkOnTheWay) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("no-symlinks-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "real" / "sub");
  std::filesystem::create_directory_symlink("real", dir / "link");
  const RealSyscalls syscalls;
  const auto direct = syscalls.statvfs_no_symlinks(dir / "real" / "sub");
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->total_bytes, syscalls.statvfs(dir / "real")->total_bytes);
  EXPECT_FALSE(syscalls.statvfs_no_symlinks(dir / "link"));
  EXPECT_FALSE(syscalls.statvfs_no_symlinks(dir / "link" / "sub"));
  EXPECT_FALSE(syscalls.statvfs_no_symlinks(dir / "missing"));
  EXPECT_FALSE(syscalls.statvfs_no_symlinks("/proc/self/cwd"));  // a magic link
  std::filesystem::remove_all(dir);
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
