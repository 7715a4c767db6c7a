#pragma once
// The few calls a root prefix cannot redirect: statvfs of a mount, the clocks,
// resource limits, and the identity of the caller. Tests inject a fake.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>

#include "core/error.h"

namespace headroom {

/// df's Use%: used / (used + avail) with used = total - free, 0..100. Blocks
/// reserved for root count neither as used nor as available, so 100 means an
/// unprivileged writer has nothing left (0 for an empty or zero-size fs).
[[nodiscard]] double df_used_percent(std::uint64_t total, std::uint64_t free, std::uint64_t avail);

/// Capacity of one filesystem, as statvfs(3) reports it, in bytes and inodes.
struct FsStats {
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;   ///< f_bfree: includes the root-reserved blocks
  std::uint64_t avail_bytes = 0;  ///< f_bavail: what an unprivileged writer gets
  std::uint64_t total_inodes = 0;
  std::uint64_t free_inodes = 0;  ///< f_favail
  bool read_only = false;

  [[nodiscard]] std::uint64_t used_bytes() const {
    return total_bytes > free_bytes ? total_bytes - free_bytes : 0;
  }
  /// Used share of the space a writer can reach, as df computes Use%: used / (used + avail).
  [[nodiscard]] double used_percent() const;
  [[nodiscard]] double inodes_used_percent() const;
};

/// A soft/hard resource limit pair; kUnlimited marks RLIM_INFINITY.
struct Limit {
  static constexpr std::uint64_t kUnlimited = ~std::uint64_t{0};
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
};

/// The kernel's answer to a write lease (Syscalls::write_lease). A write lease (fcntl
/// F_SETLEASE, F_WRLCK) is granted only when no other open file description of the inode
/// exists on the machine: every process of every user, in every pid namespace, counted
/// whether or not headroom may inspect it, and a file mapped after its fd was closed too
/// (the mapping keeps its open file). The lease is released at once. This is the proof
/// `clean` and `prune` use for regular files; /proc only names the holders. An open() by
/// someone else during those microseconds waits for the release; the break is announced
/// with SIGURG (or SIGWINCH), never the default SIGIO that would end this process. Leases
/// need the caller to own the file or CAP_LEASE (root), and a filesystem that supports
/// them (not NFS): otherwise the answer is kUnknown.
enum class LeaseAnswer {
  kUnused,   ///< the lease was granted: no other open or mapping exists
  kInUse,    ///< refused (EAGAIN): someone else has it open or mapped
  kUnknown,  ///< leases are off, not supported here, or not ours to take
};

/// System calls whose target is not a path under SysRoot.
class Syscalls {
 public:
  virtual ~Syscalls() = default;
  /// statvfs(2) of the filesystem holding `path`.
  [[nodiscard]] virtual Result<FsStats> statvfs(const std::filesystem::path& path) const = 0;
  /// statvfs of the filesystem holding `path`, looked up without following any symlink
  /// (openat2 RESOLVE_NO_SYMLINKS, then fstatvfs): nullopt when a component is a symlink or
  /// the lookup fails for any other reason, and the caller must resolve the path itself.
  /// A seam that cannot do it (a test's) says nullopt.
  [[nodiscard]] virtual std::optional<FsStats> statvfs_no_symlinks(
      const std::filesystem::path& /*path*/) const {
    return std::nullopt;
  }
  /// Wall-clock time.
  [[nodiscard]] virtual std::chrono::system_clock::time_point now() const = 0;
  /// Monotonic time, for rates.
  [[nodiscard]] virtual std::chrono::steady_clock::time_point monotonic() const = 0;
  /// RLIMIT_NOFILE of the calling process.
  [[nodiscard]] virtual Result<Limit> open_files_limit() const = 0;
  /// Effective uid of the caller.
  [[nodiscard]] virtual uid_t effective_uid() const = 0;
  /// Whether anyone else has the regular file open at `fd` (opened by the caller
  /// O_RDONLY|O_NOFOLLOW): a write lease taken and released at once. A fixture tree's
  /// files are shared by tests running side by side, so tests answer for the kernel.
  [[nodiscard]] virtual LeaseAnswer write_lease(int fd) const = 0;
  /// Whether anyone has the regular file at `fd` (opened by the caller O_RDONLY) open for
  /// writing, or mapped writable: a read lease (F_RDLCK) taken and released at once, refused
  /// (kInUse) only then. Unlike write_lease, a reader (`tail -f`, a backup, an uploader) does
  /// not count: this tells a save still being written from a dead save's leftovers read by
  /// someone. Same permissions and filesystems as write_lease.
  [[nodiscard]] virtual LeaseAnswer read_lease(int fd) const = 0;
};

/// The real calls.
class RealSyscalls final : public Syscalls {
 public:
  [[nodiscard]] Result<FsStats> statvfs(const std::filesystem::path& path) const override;
  [[nodiscard]] std::optional<FsStats> statvfs_no_symlinks(
      const std::filesystem::path& path) const override;
  [[nodiscard]] std::chrono::system_clock::time_point now() const override;
  [[nodiscard]] std::chrono::steady_clock::time_point monotonic() const override;
  [[nodiscard]] Result<Limit> open_files_limit() const override;
  [[nodiscard]] uid_t effective_uid() const override;
  [[nodiscard]] LeaseAnswer write_lease(int fd) const override;
  [[nodiscard]] LeaseAnswer read_lease(int fd) const override;
};

}  // namespace headroom
