#pragma once
// The in-use index: one scan of every process it may read under <root>/proc
// (fd/, maps, cwd, root, exe), answering "who holds (device, inode)?" and
// "who holds anything at or under this path?". It sees what lsof +D and
// fuser miss: segments mapped after their fd was closed (maps), files deleted
// while open or mapped ("(deleted)" link targets), and SysV shm segments
// (/proc/sysvipc/shm). Used by `who`, `clean`, `du`, `prune` and shm.stale.
//
// Sources: proc(5) /proc/<pid>/fd, /proc/<pid>/maps, /proc/<pid>/cwd|root|exe,
// /proc/sysvipc/shm; as root, for a path scan, BPF task iterators in place of fd/
// and maps (core/kernel/task_iterators.h, ScanOptions::kernel_iterators). Quirks handled: maps'
// device column is hex major:minor; a vanished pid (ENOENT/ESRCH) is skipped silently; a pid we may
// not read (EACCES, EPERM) is counted and listed, because a file it holds would otherwise look
// unheld; with hidepid=1/2 other users' pids are invisible, which `hidepid` reports. Overlayfs:
// maps show the lower file's device while stat of an fd shows the overlay's, so the same file may
// carry two ids.

#include <sys/stat.h>
#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/kernel/sysvipc_shm.h"

namespace headroom {

/// A file's identity: st_dev (as makedev(major, minor)) and st_ino.
struct FileId {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  auto operator<=>(const FileId&) const = default;
};

/// The identity in a stat(2) result.
[[nodiscard]] inline FileId file_id_of(const struct stat& info) {
  return {static_cast<std::uint64_t>(info.st_dev), static_cast<std::uint64_t>(info.st_ino)};
}

/// How a process holds a file.
enum class HoldKind { kFd, kMap, kCwd, kRoot, kExe };

/// "fd", "mmap", "cwd", "root", "exe".
[[nodiscard]] std::string_view to_string(HoldKind kind);

/// One process holding one file in one way.
struct Holder {
  int pid = 0;
  HoldKind how = HoldKind::kFd;
  int fd = -1;  ///< the fd number, for kFd
  FileId file;
  std::string path;      ///< as the kernel shows it, e.g. "/dev/shm/x (deleted)"
  bool deleted = false;  ///< the kernel marked the target "(deleted)"
  /// st_size from stat of the fd, or for a map the bytes mapped; 0 when unknown.
  std::uint64_t size_bytes = 0;

  /// `path` without the " (deleted)" suffix: where the file was.
  [[nodiscard]] std::string_view original_path() const;
};

/// A process that holds at least one indexed file.
struct ProcessInfo {
  int pid = 0;
  /// The owner of /proc/<pid> (its effective uid, as ps shows, non-dumpable or
  /// not); in a recorded tree whose /proc/<pid> is root's, the uid in its status.
  uid_t uid = 0;
  std::string user;     ///< name from <root>/etc/passwd, or the uid as text
  std::string command;  ///< comm (at most 15 chars)
  std::string cmdline;  ///< argv joined by spaces (may be empty for kernel threads)
};

/// Restricts a scan to what the caller needs; the defaults index everything.
struct ScanOptions {
  /// Only files on these devices are indexed (e.g. the st_dev of /dev/shm); empty: all.
  std::vector<std::uint64_t> devices;
  /// Only files whose path (as the kernel shows it, "(deleted)" stripped) is at
  /// or under one of these host paths, OR whose device is in `devices`; empty: no path filter.
  std::vector<std::filesystem::path> path_prefixes;
  bool include_fds = true;
  bool include_maps = true;
  bool include_cwd_root_exe = true;
  /// Read each holder's command line (ProcessInfo::cmdline); off saves ~4 syscalls per holder.
  bool include_cmdline = true;
  /// Also read /proc/sysvipc/shm.
  bool include_sysv = true;
  /// Leave out the scanning process itself (its /proc and directory fds).
  bool exclude_self = true;
  /// Only these pids (empty: every pid in /proc). For cheap re-checks.
  std::vector<int> pids;
  /// A path scan may read fds and mappings with the kernel's BPF task iterators where
  /// they are allowed and give the same answer (inuse_scan.cc); false (or the
  /// environment variable HEADROOM_NO_BPF set): /proc only.
  bool kernel_iterators = true;
};

/// The result of one scan. Immutable after scan_in_use returns.
class InUseIndex {
 public:
  /// Every way any process holds (device, inode); empty when nobody does.
  [[nodiscard]] std::vector<const Holder*> holders(FileId file) const;
  /// Whether anybody holds (device, inode).
  [[nodiscard]] bool is_held(FileId file) const;
  /// Holders whose path (deleted suffix stripped) is `path` or below it,
  /// plus holders of `path`'s own (device, inode) when given. The path is a host path.
  [[nodiscard]] std::vector<const Holder*> holders_under(
      const std::filesystem::path& path, std::optional<FileId> path_id = std::nullopt) const;
  /// Holders of any file on `device` (fuser -m semantics).
  [[nodiscard]] std::vector<const Holder*> holders_on_device(std::uint64_t device) const;

  /// All holders, in scan order (pid ascending).
  [[nodiscard]] std::span<const Holder> all() const { return holders_; }
  /// The process of a holder; nullptr only for a pid the index does not know.
  [[nodiscard]] const ProcessInfo* process(int pid) const;
  /// SysV segments (empty when not requested or not readable).
  [[nodiscard]] std::span<const SysvSegment> sysv_segments() const { return sysv_; }
  /// Why /proc/sysvipc/shm could not be read, when requested and it failed.
  [[nodiscard]] const std::optional<Error>& sysv_error() const { return sysv_error_; }

  /// Number of pids seen in /proc.
  [[nodiscard]] std::size_t processes_scanned() const { return scanned_; }
  /// Pids whose fd/maps we were refused (EACCES/EPERM): they may hold files we cannot see.
  /// Kernel threads are left out: they hold no files.
  [[nodiscard]] std::span<const int> unreadable_pids() const { return unreadable_; }
  /// /proc is mounted with hidepid: other users' processes may be invisible.
  [[nodiscard]] bool hidepid() const { return hidepid_; }
  /// This /proc is not the initial pid namespace's (a container, `unshare -p`): processes
  /// of the namespaces around it are invisible, though they may share its files.
  [[nodiscard]] bool outer_pid_namespaces_hidden() const { return outer_pid_namespaces_hidden_; }
  /// The fds and mappings came from the kernel's BPF task iterators, not /proc (ScanOptions).
  [[nodiscard]] bool by_kernel_iterators() const { return by_kernel_iterators_; }
  /// True when the scan saw every process: none unreadable, no hidepid, no outer pid namespace.
  [[nodiscard]] bool complete() const {
    return unreadable_.empty() && !hidepid_ && !outer_pid_namespaces_hidden_;
  }

 private:
  friend class InUseScanner;
  std::vector<Holder> holders_;
  std::unordered_multimap<std::uint64_t, std::size_t> by_inode_;  // inode -> index in holders_
  std::unordered_map<int, ProcessInfo> processes_;
  std::vector<SysvSegment> sysv_;
  std::optional<Error> sysv_error_;
  std::vector<int> unreadable_;
  std::size_t scanned_ = 0;
  bool hidepid_ = false;
  bool outer_pid_namespaces_hidden_ = false;
  bool by_kernel_iterators_ = false;
};

/// Scans <root>/proc once. Fails only when /proc itself cannot be opened.
[[nodiscard]] Result<InUseIndex> scan_in_use(const Context& context,
                                             const ScanOptions& options = {});

/// True when `path` is `prefix` or below it ("/tmp/a" is under "/tmp", "/tmpx" is not).
[[nodiscard]] bool path_at_or_under(std::string_view path, std::string_view prefix);

/// Device and inode of a host path (lstat: a symlink is itself); Error when missing.
[[nodiscard]] Result<FileId> file_id(const std::filesystem::path& path);

}  // namespace headroom
