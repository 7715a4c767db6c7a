// The scanner against a real child process (live /proc) and against a
// recorded-style tree under a root prefix.

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include "core/inuse/inuse_index.h"
#include "core/kernel/mountinfo.h"
#include "core/kernel/proc_pid_stat.h"
#include "core/kernel/task_iterators.h"

namespace headroom {
namespace {

namespace fs = std::filesystem;

class RealSyscallsContext {
 public:
  explicit RealSyscallsContext(fs::path root = "/") {
    context_.root = SysRoot(std::move(root));
    context_.syscalls = &calls_;
  }
  const Context& get() const { return context_; }

 private:
  RealSyscalls calls_;
  Context context_;
};

// A scratch dir in the build tree (never the host's /tmp or /dev/shm).
fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::current_path() / ("inuse-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& path, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out << std::string(bytes, 'x');
}

// A forked child that runs `setup` (true: all went well), says so, and waits to be killed.
class Child {
 public:
  explicit Child(const std::function<bool()>& setup) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      const bool ok = setup();
      if (::write(ready[1], ok ? "y" : "n", 1) != 1) ::_exit(4);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char answer = 0;
    EXPECT_EQ(::read(ready[0], &answer, 1), 1);
    EXPECT_EQ(answer, 'y');
    ::close(ready[0]);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  [[nodiscard]] int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

// A child that holds files in every way the index knows.
class Holder : public Child {
 public:
  explicit Holder(const fs::path& dir)
      : Child([dir] {
          write_file(dir / "open", 100);
          write_file(dir / "mapped", 8192);
          write_file(dir / "deleted-open", 300);
          write_file(dir / "deleted-mapped", 4096);
          fs::create_directories(dir / "cwd");
          const int keep = ::open((dir / "open").c_str(), O_RDONLY);
          const int map_fd = ::open((dir / "mapped").c_str(), O_RDWR);
          void* map = ::mmap(nullptr, 8192, PROT_READ, MAP_SHARED, map_fd, 0);
          ::close(map_fd);  // mapped after close: only maps shows it
          const int gone = ::open((dir / "deleted-open").c_str(), O_RDONLY);
          ::unlink((dir / "deleted-open").c_str());
          const int gone_map_fd = ::open((dir / "deleted-mapped").c_str(), O_RDWR);
          void* gone_map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, gone_map_fd, 0);
          ::close(gone_map_fd);
          ::unlink((dir / "deleted-mapped").c_str());
          if (::chdir((dir / "cwd").c_str()) != 0) return false;
          return keep >= 0 && map != MAP_FAILED && gone >= 0 && gone_map != MAP_FAILED;
        }) {}
};

const headroom::Holder* find(const InUseIndex& index, std::string_view path, HoldKind how) {
  for (const headroom::Holder& holder : index.all()) {
    if (holder.original_path() == path && holder.how == how) return &holder;
  }
  return nullptr;
}

// Whether a path scan of `dir` also tests the device of a name that matched: every
// mount on the way to it and below it gives its files its own device (devices_below).
bool device_checked(const fs::path& dir) {
  const RealSyscallsContext context;
  const auto mounts = read_mountinfo(context.get());
  return mounts && devices_below(*mounts, dir);
}

// Two scans of one child found the same holders, field for field; sizes of the files
// under `dir` only: the child's stdout may be a log that other tests grow between the
// two scans (ctest -j2 writes LastTest.log).
void expect_same_holders(const InUseIndex& fast, const InUseIndex& slow, const fs::path& dir) {
  ASSERT_EQ(fast.all().size(), slow.all().size());
  for (std::size_t i = 0; i < fast.all().size(); ++i) {
    const headroom::Holder& a = fast.all()[i];
    const headroom::Holder& b = slow.all()[i];
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.how, b.how) << a.path;
    EXPECT_EQ(a.fd, b.fd) << a.path;
    EXPECT_EQ(a.file, b.file) << a.path;
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.deleted, b.deleted) << a.path;
    if (a.path.starts_with(dir.native())) {
      EXPECT_EQ(a.size_bytes, b.size_bytes) << a.path;
    }
  }
}

TEST(ScanInUse, SeesOpenMappedAfterCloseDeletedAndCwd) {
  const fs::path dir = scratch("live");
  const Holder child(dir);
  const RealSyscallsContext context;
  ScanOptions options;
  options.pids = {child.pid()};
  options.path_prefixes = {dir};
  const auto index = scan_in_use(context.get(), options);
  ASSERT_TRUE(index) << index.error().message;

  const auto* open = find(*index, (dir / "open").native(), HoldKind::kFd);
  ASSERT_NE(open, nullptr);
  EXPECT_GE(open->fd, 0);
  EXPECT_EQ(open->size_bytes, 100u);
  EXPECT_FALSE(open->deleted);
  EXPECT_TRUE(index->is_held(*file_id(dir / "open")));

  const auto* mapped = find(*index, (dir / "mapped").native(), HoldKind::kMap);
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(mapped->file, *file_id(dir / "mapped"));
  EXPECT_EQ(find(*index, (dir / "mapped").native(), HoldKind::kFd), nullptr);

  const auto* deleted_open = find(*index, (dir / "deleted-open").native(), HoldKind::kFd);
  ASSERT_NE(deleted_open, nullptr);
  EXPECT_TRUE(deleted_open->deleted);
  EXPECT_EQ(deleted_open->path, (dir / "deleted-open").native() + " (deleted)");
  EXPECT_EQ(deleted_open->size_bytes, 300u);

  const auto* deleted_mapped = find(*index, (dir / "deleted-mapped").native(), HoldKind::kMap);
  ASSERT_NE(deleted_mapped, nullptr);
  EXPECT_TRUE(deleted_mapped->deleted);

  EXPECT_NE(find(*index, (dir / "cwd").native(), HoldKind::kCwd), nullptr);
  EXPECT_EQ(index->holders_under(dir).size(), 5u);
  EXPECT_TRUE(index->holders_under(dir / "op").empty());  // a prefix is not a parent

  const ProcessInfo* process = index->process(child.pid());
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->uid, ::getuid());
  EXPECT_FALSE(process->command.empty());
  fs::remove_all(dir);
}

// With a device filter and no path filter the scan stats fd, cwd, root and exe links
// before reading them and walks maps with the PROCMAP_QUERY ioctl (inuse_scan.cc); with
// a path filter it reads every link and the maps text. Both must find the same holders,
// field for field: here the child's files, its executable (mapped 4-5 times, one holder)
// and cwd, a file mapped after close and one mapped then deleted.
TEST(ScanInUse, DeviceFilterKeepsOnlyThatDeviceAndFindsWhatTheTextFinds) {
  const fs::path dir = scratch("same");
  const Holder child(dir);
  const RealSyscallsContext context;
  ScanOptions by_device;
  by_device.pids = {child.pid()};
  by_device.devices = {file_id(dir)->device};
  ScanOptions by_text = by_device;
  by_text.path_prefixes = {"/no/such/prefix"};  // a path filter turns the shortcuts off
  const auto fast = scan_in_use(context.get(), by_device);
  const auto slow = scan_in_use(context.get(), by_text);
  ASSERT_TRUE(fast) << fast.error().message;
  ASSERT_TRUE(slow) << slow.error().message;
  EXPECT_EQ(fast->holders_on_device(file_id(dir)->device).size(), fast->all().size());
  expect_same_holders(*fast, *slow, dir);
  EXPECT_GE(fast->holders_under(dir).size(), 5u);
  const auto* deleted_mapped = find(*fast, (dir / "deleted-mapped").native(), HoldKind::kMap);
  ASSERT_NE(deleted_mapped, nullptr);
  EXPECT_TRUE(deleted_mapped->deleted);
  EXPECT_EQ(deleted_mapped->size_bytes, 4096u);
  EXPECT_NE(find(*fast, (dir / "mapped").native(), HoldKind::kMap), nullptr);
  fs::remove_all(dir);
}

// A path filter on a filesystem whose files all carry its device (ext4, tmpfs, ...) also
// tests the device of a file whose name matched (inuse_scan.cc). With a device filter
// beside the paths there is no such test, and a device no file is on leaves the path
// filter alone to decide. Both scans must find the same holders, field for field.
TEST(ScanInUse, APathFilterCheckedByItsDevicesFindsWhatTheNameAloneFinds) {
  const fs::path dir = scratch("gated");
  const RealSyscallsContext context;
  if (!device_checked(dir)) {
    GTEST_SKIP() << dir << " is on a filesystem whose files have devices of their own";
  }
  const Holder child(dir);
  ScanOptions gated;
  gated.pids = {child.pid()};
  gated.path_prefixes = {dir};
  ScanOptions by_text = gated;
  by_text.devices = {makedev(4095, 1048575)};
  const auto fast = scan_in_use(context.get(), gated);
  const auto slow = scan_in_use(context.get(), by_text);
  ASSERT_TRUE(fast) << fast.error().message;
  ASSERT_TRUE(slow) << slow.error().message;
  ASSERT_EQ(fast->all().size(), 5u);  // open, mapped, deleted-open, deleted-mapped, cwd
  expect_same_holders(*fast, *slow, dir);
  fs::remove_all(dir);
}

// In a sandbox whose seccomp profile refuses statx (older Docker profiles answered
// EPERM, others ENOSYS), a scan by device must still find every holder: a refused stat
// would otherwise drop every link, and clean would take every file for unused.
TEST(ScanInUse, AScanByDeviceWhereStatxIsRefusedStillFindsEveryHolder) {
  const fs::path dir = scratch("no-statx");
  const RealSyscallsContext context;
  struct stat dir_info {};
  ASSERT_EQ(::stat(dir.c_str(), &dir_info), 0);
  const auto device = static_cast<std::uint64_t>(dir_info.st_dev);
  const Holder child(dir);
  for (const int refusal : {ENOSYS, EPERM}) {
    int result[2];
    ASSERT_EQ(::pipe(result), 0);
    const pid_t scanner = ::fork();
    if (scanner == 0) {
      ::close(result[0]);
      std::array<sock_filter, 4> program = {{
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, 0, 1),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<unsigned>(refusal)),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      }};
      sock_fprog filter{static_cast<unsigned short>(program.size()), program.data()};
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) != 0) {
        ::_exit(5);
      }
      ScanOptions options;
      options.pids = {child.pid()};
      options.devices = {device};  // a scan by device tests the device first
      const auto index = scan_in_use(context.get(), options);
      const char found = index ? static_cast<char>(index->holders_under(dir).size()) : -1;
      if (::write(result[1], &found, 1) != 1) ::_exit(4);
      ::_exit(0);
    }
    ::close(result[1]);
    char found = 0;
    EXPECT_EQ(::read(result[0], &found, 1), 1) << "the scanner could not install its filter";
    ::close(result[0]);
    int status = 0;
    ::waitpid(scanner, &status, 0);
    EXPECT_EQ(found, 5) << "with statx refused by errno " << refusal;
  }
  fs::remove_all(dir);
}

// A process in another mount namespace, with a filesystem of its own mounted on the
// same path, holds a file whose name reads as one under the path asked about. It is
// not a file under that path as the asker sees it (lsof +D does not show it either):
// the device check leaves it out. Before it, the name alone made it a holder.
TEST(ScanInUse, AFileOfAnotherMountNamespaceAtTheSamePathIsNotUnderIt) {
  const fs::path dir = scratch("other-ns");
  const RealSyscallsContext context;
  if (::geteuid() != 0 || !device_checked(dir)) {
    GTEST_SKIP() << "needs root and a filesystem whose files carry its device";
  }
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    char answer = 'y';
    int theirs = -1;
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("headroom-test", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
      answer = 'u';
    } else {
      theirs = ::open((dir / "theirs").c_str(), O_CREAT | O_RDWR, 0600);
      // And one mapped after close: maps names it under dir too.
      const int mapped = ::open((dir / "theirs-mapped").c_str(), O_CREAT | O_RDWR, 0600);
      const bool sized = mapped >= 0 && ::ftruncate(mapped, 4096) == 0;
      void* map = sized ? ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, mapped, 0) : MAP_FAILED;
      if (mapped >= 0) ::close(mapped);
      if (theirs < 0 || map == MAP_FAILED) answer = 'n';
    }
    if (::write(ready[1], &answer, 1) != 1) ::_exit(4);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char answer = 0;
  EXPECT_EQ(::read(ready[0], &answer, 1), 1);
  ::close(ready[0]);
  const auto end_child = [&] {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  };
  if (answer == 'u') {
    end_child();
    GTEST_SKIP() << "no mount namespace could be made";
  }
  ASSERT_EQ(answer, 'y');
  ScanOptions everything;
  everything.pids = {pid};
  ScanOptions under_dir = everything;
  under_dir.path_prefixes = {dir};
  const auto all = scan_in_use(context.get(), everything);
  const auto under = scan_in_use(context.get(), under_dir);
  end_child();
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_TRUE(under) << under.error().message;
  // The scan sees the child's fd, its mapping and their names ...
  EXPECT_NE(find(*all, (dir / "theirs").native(), HoldKind::kFd), nullptr);
  EXPECT_NE(find(*all, (dir / "theirs-mapped").native(), HoldKind::kMap), nullptr);
  // ... and that it is not on any filesystem at or below dir.
  EXPECT_TRUE(under->all().empty()) << under->all().front().path;
  fs::remove_all(dir);
}

// A child that holds `file` open with the given real and effective uid, until killed.
pid_t hold_as(const fs::path& file, uid_t real, uid_t effective) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    const int fd = ::open(file.c_str(), O_RDONLY);
    const bool ok = fd >= 0 && ::setresuid(real, effective, effective) == 0;
    if (::write(ready[1], ok ? "y" : "n", 1) != 1) ::_exit(4);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char answer = 0;
  const bool ok = ::read(ready[0], &answer, 1) == 1 && answer == 'y';
  ::close(ready[0]);
  if (!ok) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

// A holder's user is its effective uid, as ps's USER shows it: a process that dropped
// root for another user is not dumpable any more (its /proc/<pid>/status is root's) and
// is that user's; one whose effective uid is root is root's, whoever started it.
TEST(ScanInUse, AHoldersUserIsItsEffectiveUidDumpableOrNot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change uids";
  const fs::path dir = scratch("owners");
  write_file(dir / "held", 10);
  const RealSyscallsContext context;
  const pid_t dropped = hold_as(dir / "held", 65534, 65534);
  const pid_t setuid_root = hold_as(dir / "held", 65534, 0);
  ASSERT_GT(dropped, 0);
  ASSERT_GT(setuid_root, 0);
  struct stat status {};
  ASSERT_EQ(::stat(fmt::format("/proc/{}/status", dropped).c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, 0u) << "a process that dropped root should not be dumpable";
  ScanOptions options;
  options.pids = {dropped, setuid_root};
  options.path_prefixes = {dir};
  const auto index = scan_in_use(context.get(), options);
  for (const pid_t pid : {dropped, setuid_root}) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(index) << index.error().message;
  ASSERT_EQ(index->all().size(), 2u);
  ASSERT_NE(index->process(dropped), nullptr);
  ASSERT_NE(index->process(setuid_root), nullptr);
  EXPECT_EQ(index->process(dropped)->uid, 65534u);
  EXPECT_EQ(index->process(setuid_root)->uid, 0u);
  EXPECT_FALSE(index->process(dropped)->command.empty());
  EXPECT_FALSE(index->process(setuid_root)->command.empty());
  fs::remove_all(dir);
}

// A kernel thread has no exe, so the scan does not open its fd/ or maps (inuse_scan.cc):
// its cwd and root, "/", are still found, as before that shortcut.
// A child beside Holder: a deleted file larger than its mapping (the holder's size is
// the file's, from map_files/), and a second thread that opened and mapped files of its
// own (one fd table, one address space: listed once, under the process).
class ThreadedHolder : public Child {
 public:
  explicit ThreadedHolder(const fs::path& dir)
      : Child([dir] {
          write_file(dir / "big-deleted", 10000);
          write_file(dir / "thread-open", 10);
          write_file(dir / "thread-mapped", 4096);
          const int fd = ::open((dir / "big-deleted").c_str(), O_RDONLY);
          void* map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
          ::close(fd);
          ::unlink((dir / "big-deleted").c_str());
          bool ok = map != MAP_FAILED;
          std::thread([&] {
            ok = ok && ::open((dir / "thread-open").c_str(), O_RDONLY) >= 0;
            const int map_fd = ::open((dir / "thread-mapped").c_str(), O_RDONLY);
            ok = ok && ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, map_fd, 0) != MAP_FAILED;
            ::close(map_fd);
          }).join();
          std::thread([] {  // a thread alive while the scans run
            for (;;) ::pause();
          })
              .detach();
          return ok;
        }) {}
};

// A path scan by the kernel's task iterators where they are allowed, and one by /proc.
std::pair<Result<InUseIndex>, Result<InUseIndex>> scan_both_ways(const Context& context,
                                                                 const fs::path& asked) {
  ScanOptions by_kernel;
  by_kernel.include_sysv = false;
  by_kernel.include_cmdline = false;
  by_kernel.path_prefixes = {asked};
  ScanOptions by_proc = by_kernel;
  by_proc.kernel_iterators = false;
  return {scan_in_use(context, by_kernel), scan_in_use(context, by_proc)};
}

// A path scan by the kernel's BPF task iterators (as root where the kernel allows them)
// and the /proc scan find the same holders, field for field, and name the processes
// alike: every kind (fd, mapped after close, deleted open and mapped, cwd, a thread's
// files), a deleted file asked for by its own name, and a prefix that is not a parent.
TEST(ScanInUse, TheKernelIteratorsFindWhatProcFinds) {
  const fs::path dir = scratch("iterators");
  if (auto iterators = TaskIterators::load({dir.native()}); !iterators) {
    GTEST_SKIP() << "no BPF task iterators here: " << iterators.error().message;
  }
  const Holder child(dir);
  const ThreadedHolder threaded(dir);
  const RealSyscallsContext context;
  for (const fs::path& asked :
       {dir, dir / "deleted-open", dir / "big-deleted", dir / "op", dir / "cwd/"}) {
    const auto [fast, slow] = scan_both_ways(context.get(), asked);
    ASSERT_TRUE(fast) << fast.error().message;
    ASSERT_TRUE(slow) << slow.error().message;
    EXPECT_TRUE(fast->by_kernel_iterators()) << asked;
    EXPECT_FALSE(slow->by_kernel_iterators());
    expect_same_holders(*fast, *slow, dir);
    for (const headroom::Holder& holder : fast->all()) {
      const ProcessInfo* a = fast->process(holder.pid);
      const ProcessInfo* b = slow->process(holder.pid);
      ASSERT_TRUE(a != nullptr && b != nullptr) << holder.pid;
      EXPECT_EQ(a->uid, b->uid);
      EXPECT_EQ(a->command, b->command);
    }
    if (asked == dir) {
      EXPECT_EQ(fast->all().size(), 8u);  // Holder's 5, the thread's 2, big-deleted
      const auto* big = find(*fast, (dir / "big-deleted").native(), HoldKind::kMap);
      ASSERT_NE(big, nullptr);
      EXPECT_EQ(big->size_bytes, 10000u);
      EXPECT_EQ(big->pid, threaded.pid());
      const auto* thread_open = find(*fast, (dir / "thread-open").native(), HoldKind::kFd);
      ASSERT_NE(thread_open, nullptr);
      EXPECT_EQ(thread_open->pid, threaded.pid());
    } else if (asked == dir / "deleted-open" || asked == dir / "big-deleted") {
      EXPECT_EQ(fast->all().size(), 1u) << asked;
    } else if (asked == dir / "op") {
      EXPECT_TRUE(fast->all().empty());
    } else {
      EXPECT_EQ(fast->all().size(), 1u) << asked;  // the cwd
    }
  }
  fs::remove_all(dir);
}

// Names as long as /proc gives them: a file whose name is 4095 bytes (the longest
// readlink of an fd gives), open and mapped, and a mapping deeper than PATH_MAX, named
// only by the maps text (an fd that deep has no name for either scan). Under `dir`:
// <200 a's>/... to 4095 bytes with the x's, and three more levels of a's below.
constexpr std::size_t kLevel = 200;
std::string long_parent(const fs::path& dir) {
  std::string path = dir.native();
  while (path.size() + 1 + kLevel < 4095 - 20) path += "/" + std::string(kLevel, 'a');
  return path;
}
class LongNamesHolder : public Child {
 public:
  explicit LongNamesHolder(const fs::path& dir)
      : Child([dir] {
          const std::string parent = long_parent(dir);
          const std::string longest = parent + "/" + std::string(4095 - parent.size() - 1, 'x');
          fs::create_directories(parent);
          write_file(longest, 4096);
          const int fd = ::open(longest.c_str(), O_RDONLY);
          bool ok = fd >= 0 && ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED;
          const std::string level(kLevel, 'a');
          ok = ok && ::chdir(parent.c_str()) == 0;
          for (int i = 0; ok && i < 3; ++i) {
            ok = ::mkdir(level.c_str(), 0755) == 0 && ::chdir(level.c_str()) == 0;
          }
          const int deep = ok ? ::open("deep", O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
          ok = ok && deep >= 0 && ::ftruncate(deep, 4096) == 0 &&
               ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, deep, 0) != MAP_FAILED;
          ::close(deep);
          return ok && ::chdir("/") == 0;
        }) {}
};

// What is below PATH_MAX, relative to the long parent.
void remove_deep(const fs::path& dir) {
  const std::string level(kLevel, 'a');
  std::vector<int> fds{::open(long_parent(dir).c_str(), O_DIRECTORY | O_CLOEXEC)};
  for (int i = 0; i < 3 && fds.back() >= 0; ++i) {
    fds.push_back(::openat(fds.back(), level.c_str(), O_DIRECTORY | O_CLOEXEC));
  }
  if (fds.back() >= 0) ::unlinkat(fds.back(), "deep", 0);
  for (std::size_t i = fds.size() - 1; i > 0; --i) {
    ::close(fds[i]);
    ::unlinkat(fds[i - 1], level.c_str(), AT_REMOVEDIR);
  }
  ::close(fds[0]);
}

TEST(ScanInUse, TheKernelIteratorsNameFilesAsLongAsProcDoes) {
  const fs::path dir = scratch("longnames");
  if (auto iterators = TaskIterators::load({dir.native()}); !iterators) {
    GTEST_SKIP() << "no BPF task iterators here: " << iterators.error().message;
  }
  {
    const LongNamesHolder child(dir);
    const RealSyscallsContext context;
    const auto [fast, slow] = scan_both_ways(context.get(), dir);
    ASSERT_TRUE(fast) << fast.error().message;
    ASSERT_TRUE(slow) << slow.error().message;
    EXPECT_TRUE(fast->by_kernel_iterators());
    // The 4095-byte file's fd and mapping, the deep file's mapping.
    ASSERT_EQ(slow->all().size(), 3u);
    const auto longer = [](std::size_t bytes) {
      return [bytes](const headroom::Holder& h) { return h.path.size() > bytes; };
    };
    EXPECT_EQ(std::count_if(slow->all().begin(), slow->all().end(), longer(4094)), 3);
    EXPECT_EQ(std::count_if(slow->all().begin(), slow->all().end(), longer(4096)), 1);
    expect_same_holders(*fast, *slow, dir);
  }
  remove_deep(dir);
  fs::remove_all(dir);
}

// The scan by device reads a deleted mapped file's size from map_files/ too: it had
// passed the range without its maps line and kept the bytes mapped.
TEST(ScanInUse, AScanByDeviceSizesADeletedMappedFileByTheFile) {
  const fs::path dir = scratch("mapsize");
  const ThreadedHolder child(dir);
  const RealSyscallsContext context;
  ScanOptions by_device;
  by_device.pids = {child.pid()};
  by_device.devices = {file_id(dir)->device};
  const auto index = scan_in_use(context.get(), by_device);
  ASSERT_TRUE(index) << index.error().message;
  const auto* big = find(*index, (dir / "big-deleted").native(), HoldKind::kMap);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->size_bytes, 10000u);
  fs::remove_all(dir);
}

TEST(ScanInUse, KernelThreadsStillHoldTheirCwdAndRoot) {
  const RealSyscallsContext context;
  if (::geteuid() != 0 || !is_kernel_thread(context.get(), 2)) {
    GTEST_SKIP() << "needs root and kthreadd (pid 2) in this pid namespace";
  }
  ScanOptions options;
  options.pids = {2};
  options.path_prefixes = {"/"};
  const auto index = scan_in_use(context.get(), options);
  ASSERT_TRUE(index) << index.error().message;
  std::vector<HoldKind> kinds;
  for (const headroom::Holder& holder : index->all()) {
    EXPECT_EQ(holder.path, "/");
    kinds.push_back(holder.how);
  }
  EXPECT_EQ(kinds, (std::vector<HoldKind>{HoldKind::kCwd, HoldKind::kRoot}));
}

TEST(ScanInUse, ExcludesItselfByDefault) {
  const RealSyscallsContext context;
  ScanOptions options;
  options.pids = {static_cast<int>(::getpid())};
  const auto index = scan_in_use(context.get(), options);
  ASSERT_TRUE(index);
  EXPECT_TRUE(index->all().empty());
  options.exclude_self = false;
  const auto with_self = scan_in_use(context.get(), options);
  ASSERT_TRUE(with_self);
  EXPECT_FALSE(with_self->all().empty());
}

// A tree laid out as /proc is, under a root prefix: maps and sysvipc come from
// text, so the index needs no live process.
TEST(ScanInUse, ReadsATreeUnderTheRootPrefix) {
  const fs::path root = scratch("root");
  fs::create_directories(root / "proc/4242");
  fs::create_directories(root / "proc/sysvipc");
  fs::create_directories(root / "etc");
  std::ofstream(root / "proc/4242/maps")
      << "7f0000000000-7f0000400000 rw-s 00000000 00:1a 77 /dev/shm/nccl-Ab12Cd\n"
         "7f0000400000-7f0000800000 rw-s 00400000 00:1a 77 /dev/shm/nccl-Ab12Cd\n"
         "7f0000800000-7f0000801000 rw-s 00000000 00:1a 78 /dev/shm/torch_1_2_3 (deleted)\n"
         "7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\n";
  std::ofstream(root / "proc/4242/comm") << "python3\n";
  std::ofstream(root / "proc/4242/cmdline") << std::string("python3\0train.py\0", 17);
  std::ofstream(root / "proc/4242/status")
      << "Name:\tpython3\nPid:\t4242\nUid:\t1000\t1000\t1000\t1000\n";
  std::ofstream(root / "proc/sysvipc/shm")
      << "key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime rss swap\n"
         "0 9 600 1048576 1 1 0 1000 1000 1000 1000 0 0 5 0 0\n";
  std::ofstream(root / "etc/passwd") << "alice:x:1000:1000::/home/alice:/bin/sh\n";

  const RealSyscallsContext context(root);
  const auto index = scan_in_use(context.get());
  ASSERT_TRUE(index) << index.error().message;
  EXPECT_EQ(index->processes_scanned(), 1u);
  const FileId nccl{makedev(0, 0x1a), 77};
  const auto holders = index->holders(nccl);
  ASSERT_EQ(holders.size(), 1u);  // two mappings of one file are one holder
  EXPECT_EQ(holders[0]->size_bytes, 8u << 20);
  EXPECT_EQ(index->holders_under("/dev/shm").size(), 2u);
  const ProcessInfo* process = index->process(4242);
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->user, "alice");
  EXPECT_EQ(process->cmdline, "python3 train.py");
  ASSERT_EQ(index->sysv_segments().size(), 1u);
  EXPECT_EQ(index->sysv_segments()[0].attachments, 0u);
  fs::remove_all(root);
}

}  // namespace
}  // namespace headroom
