#include "core/syscalls.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace headroom {

namespace {

// While the lease is held (microseconds), another process's open() starts a lease break
// and the kernel signals the holder: SIGIO by default, whose default action ends the
// process. The break is announced with a signal whose default action is to ignore it
// instead, one this process does not handle; with none such, no lease is taken.
int quiet_break_signal() {
  for (const int candidate : {SIGURG, SIGWINCH}) {
    struct sigaction current {};
    if (::sigaction(candidate, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 &&
        (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
      return candidate;
    }
  }
  return 0;
}

}  // namespace

double df_used_percent(std::uint64_t total, std::uint64_t free, std::uint64_t avail) {
  const std::uint64_t used = total > free ? total - free : 0;
  const std::uint64_t reachable = used + avail;
  if (reachable == 0) return 0.0;
  return 100.0 * static_cast<double>(used) / static_cast<double>(reachable);
}

double FsStats::used_percent() const {
  return df_used_percent(total_bytes, free_bytes, avail_bytes);
}

double FsStats::inodes_used_percent() const {
  if (total_inodes == 0) return 0.0;  // e.g. btrfs reports no inode limit
  const std::uint64_t used = total_inodes > free_inodes ? total_inodes - free_inodes : 0;
  return 100.0 * static_cast<double>(used) / static_cast<double>(total_inodes);
}

namespace {

FsStats to_stats(const struct statvfs& raw) {
  const std::uint64_t fragment = raw.f_frsize != 0 ? raw.f_frsize : raw.f_bsize;
  FsStats stats;
  stats.total_bytes = static_cast<std::uint64_t>(raw.f_blocks) * fragment;
  stats.free_bytes = static_cast<std::uint64_t>(raw.f_bfree) * fragment;
  stats.avail_bytes = static_cast<std::uint64_t>(raw.f_bavail) * fragment;
  stats.total_inodes = raw.f_files;
  stats.free_inodes = raw.f_favail;
  stats.read_only = (raw.f_flag & ST_RDONLY) != 0;
  return stats;
}

}  // namespace

Result<FsStats> RealSyscalls::statvfs(const std::filesystem::path& path) const {
  struct statvfs raw {};
  if (::statvfs(path.c_str(), &raw) != 0) return fail(Error::from_errno(errno, path.string()));
  return to_stats(raw);
}

std::optional<FsStats> RealSyscalls::statvfs_no_symlinks(const std::filesystem::path& path) const {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const auto fd =
      static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
  if (fd < 0) return std::nullopt;  // ELOOP: a symlink; ENOSYS: a kernel before 5.6
  struct statvfs raw {};
  const int measured = ::fstatvfs(fd, &raw);
  ::close(fd);
  if (measured != 0) return std::nullopt;
  return to_stats(raw);
}

std::chrono::system_clock::time_point RealSyscalls::now() const {
  return std::chrono::system_clock::now();
}

std::chrono::steady_clock::time_point RealSyscalls::monotonic() const {
  return std::chrono::steady_clock::now();
}

Result<Limit> RealSyscalls::open_files_limit() const {
  struct rlimit raw {};
  if (::getrlimit(RLIMIT_NOFILE, &raw) != 0) return fail(Error::from_errno(errno, "getrlimit"));
  const auto convert = [](rlim_t value) {
    return value == RLIM_INFINITY ? Limit::kUnlimited : static_cast<std::uint64_t>(value);
  };
  return Limit{convert(raw.rlim_cur), convert(raw.rlim_max)};
}

uid_t RealSyscalls::effective_uid() const { return ::geteuid(); }

namespace {

LeaseAnswer take_lease(int fd, int type) {
  const int signal = quiet_break_signal();
  if (signal == 0 || ::fcntl(fd, F_SETSIG, signal) != 0) return LeaseAnswer::kUnknown;
  if (::fcntl(fd, F_SETLEASE, type) == 0) {
    (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
    return LeaseAnswer::kUnused;
  }
  return errno == EAGAIN || errno == EBUSY ? LeaseAnswer::kInUse : LeaseAnswer::kUnknown;
}

}  // namespace

LeaseAnswer RealSyscalls::write_lease(int fd) const { return take_lease(fd, F_WRLCK); }

LeaseAnswer RealSyscalls::read_lease(int fd) const { return take_lease(fd, F_RDLCK); }

}  // namespace headroom
