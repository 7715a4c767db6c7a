// The scan behind InUseIndex: every pid directory of <root>/proc, read with
// openat/getdents64/readlinkat/fstatat relative to directory fds. No
// std::filesystem iteration and no per-pid path strings on the hot path: on a
// host with thousands of processes this is what makes `who` faster than lsof.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <unordered_set>

#include "core/inuse/inuse_index.h"
#include "core/inuse/proc_maps.h"
#include "core/inuse/sysvipc_shm.h"
#include "core/inuse/user_names.h"
#include "core/probes/mountinfo.h"

namespace headroom {

namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

// An fd closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// Calls `visit(name)` for each entry of an open directory, "." and ".." left out.
template <typename Visit>
void for_each_entry(int dir_fd, Visit&& visit) {
  alignas(8) std::array<char, 32768> buffer{};
  for (;;) {
    const long got = ::syscall(SYS_getdents64, dir_fd, buffer.data(), buffer.size());
    if (got <= 0) return;  // 0: end; < 0: the pid vanished under us
    for (long at = 0; at < got;) {
      // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
      unsigned short record_length = 0;
      std::memcpy(&record_length, buffer.data() + at + 16, sizeof record_length);
      const char* name = buffer.data() + at + 19;
      at += record_length;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      visit(name);
    }
  }
}

bool parse_int(std::string_view text, int& value) {
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.data() + text.size() && !text.empty();
}

// Reads a small pseudo-file relative to `dir_fd` into `out`; false with errno set on failure.
bool read_at(int dir_fd, const char* name, std::string& out, std::size_t limit = 64 << 20) {
  out.clear();
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  std::array<char, 65536> chunk{};
  for (;;) {
    const ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return false;
    }
    if (got == 0 || out.size() >= limit) break;
    out.append(chunk.data(), static_cast<std::size_t>(got));
  }
  ::close(fd);
  return true;
}

bool refused(int error) { return error == EACCES || error == EPERM; }

std::string_view strip_deleted(std::string_view path, bool& deleted) {
  deleted = path.size() > kDeletedSuffix.size() &&
            path.substr(path.size() - kDeletedSuffix.size()) == kDeletedSuffix;
  if (deleted) path.remove_suffix(kDeletedSuffix.size());
  return path;
}

}  // namespace

/// Fills an InUseIndex; one instance per scan.
class InUseScanner {
 public:
  InUseScanner(const Context& context, const ScanOptions& options)
      : context_(context), options_(options), names_(context) {
    devices_.insert(options.devices.begin(), options.devices.end());
    for (const auto& prefix : options.path_prefixes) prefixes_.push_back(prefix.native());
    wanted_pids_.insert(options.pids.begin(), options.pids.end());
  }

  Result<InUseIndex> run() {
    const std::filesystem::path proc = context_.root.proc();
    const Fd proc_fd(::open(proc.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!proc_fd.ok()) return fail(Error::from_errno(errno, proc.string()));
    self_pid_ = own_pid(proc_fd.get());
    index_.hidepid_ = hidepid_active();

    for_each_entry(proc_fd.get(), [&](const char* name) {
      int pid = 0;
      if (!parse_int(name, pid)) return;
      if (!wanted_pids_.empty() && wanted_pids_.count(pid) == 0) return;
      if (options_.exclude_self && pid == self_pid_) return;
      ++index_.scanned_;
      scan_process(proc_fd.get(), name, pid);
    });

    if (options_.include_sysv) {
      if (auto segments = read_sysvipc_shm(context_)) {
        index_.sysv_ = std::move(*segments);
      } else {
        index_.sysv_error_ = segments.error();
      }
    }
    finish();
    return std::move(index_);
  }

 private:
  // The pid of "self" as the scanned /proc names it (our pid in its pid namespace).
  static int own_pid(int proc_fd) {
    std::array<char, 64> buffer{};
    const ssize_t got = ::readlinkat(proc_fd, "self", buffer.data(), buffer.size() - 1);
    int pid = -1;
    if (got > 0) (void)parse_int(std::string_view(buffer.data(), static_cast<std::size_t>(got)), pid);
    return pid;
  }

  [[nodiscard]] bool hidepid_active() const {
    auto mounts = read_mountinfo(context_);
    if (!mounts) return false;
    const MountEntry* proc_mount = find_mount(*mounts, "/proc");
    if (proc_mount == nullptr || proc_mount->fstype != "proc") return false;
    for (const std::string& source : {proc_mount->super_options, proc_mount->mount_options}) {
      MountEntry probe;
      probe.super_options = source;
      const auto value = probe.option("hidepid");
      if (value && *value != "0" && *value != "off") return true;
    }
    return false;
  }

  // The device filter forces a stat; the path filter alone can skip one.
  [[nodiscard]] bool path_wanted(std::string_view path) const {
    if (prefixes_.empty()) return devices_.empty();
    return std::any_of(prefixes_.begin(), prefixes_.end(),
                       [&](const std::string& prefix) { return path_at_or_under(path, prefix); });
  }
  [[nodiscard]] bool wanted(std::string_view path, std::uint64_t device) const {
    if (prefixes_.empty() && devices_.empty()) return true;
    return devices_.count(device) > 0 || path_wanted(path);
  }

  void mark_unreadable(int pid) {
    if (index_.unreadable_.empty() || index_.unreadable_.back() != pid) {
      index_.unreadable_.push_back(pid);
    }
  }

  void add(int pid, HoldKind how, int fd, FileId file, std::string_view path, bool deleted,
           std::uint64_t size) {
    Holder holder;
    holder.pid = pid;
    holder.how = how;
    holder.fd = fd;
    holder.file = file;
    holder.path.assign(path);
    holder.deleted = deleted;
    holder.size_bytes = size;
    index_.holders_.push_back(std::move(holder));
  }

  void scan_process(int proc_fd, const char* name, int pid) {
    const Fd pid_fd(::openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!pid_fd.ok()) {
      if (refused(errno)) mark_unreadable(pid);
      return;  // ENOENT/ESRCH: it exited
    }
    const std::size_t before = index_.holders_.size();
    if (options_.include_fds) scan_fds(pid_fd.get(), pid);
    if (options_.include_maps) scan_maps(pid_fd.get(), pid);
    if (options_.include_cwd_root_exe) {
      scan_link(pid_fd.get(), pid, "cwd", HoldKind::kCwd);
      scan_link(pid_fd.get(), pid, "root", HoldKind::kRoot);
      scan_link(pid_fd.get(), pid, "exe", HoldKind::kExe);
    }
    if (index_.holders_.size() > before) describe(pid_fd.get(), pid);
  }

  void scan_fds(int pid_fd, int pid) {
    const Fd fd_dir(::openat(pid_fd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd_dir.ok()) {
      if (refused(errno)) mark_unreadable(pid);
      return;
    }
    std::array<char, 4096> target{};
    for_each_entry(fd_dir.get(), [&](const char* fd_name) {
      const ssize_t got = ::readlinkat(fd_dir.get(), fd_name, target.data(), target.size());
      if (got <= 0 || target[0] != '/') return;  // socket:[..], pipe:[..], anon_inode:..
      bool deleted = false;
      const std::string_view shown(target.data(), static_cast<std::size_t>(got));
      const std::string_view original = strip_deleted(shown, deleted);
      if (devices_.empty() && !path_wanted(original)) return;
      struct stat info {};
      if (::fstatat(fd_dir.get(), fd_name, &info, 0) != 0) return;  // closed meanwhile
      const auto device = static_cast<std::uint64_t>(info.st_dev);
      if (!wanted(original, device)) return;
      int fd_number = -1;
      (void)parse_int(fd_name, fd_number);
      add(pid, HoldKind::kFd, fd_number, {device, static_cast<std::uint64_t>(info.st_ino)}, shown,
          deleted, static_cast<std::uint64_t>(info.st_size));
    });
  }

  void scan_maps(int pid_fd, int pid) {
    if (!read_at(pid_fd, "maps", maps_text_)) {
      if (refused(errno)) mark_unreadable(pid);
      return;
    }
    const std::size_t first_of_pid = index_.holders_.size();
    std::string_view text = maps_text_;
    while (!text.empty()) {
      const std::size_t newline = text.find('\n');
      const std::string_view line = text.substr(0, newline);
      text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
      const auto parsed = parse_maps_line(line);
      if (!parsed || parsed->inode == 0 || parsed->path.empty() || parsed->path.front() != '/') {
        continue;
      }
      bool deleted = false;
      const std::string_view original = strip_deleted(parsed->path, deleted);
      const FileId file{make_device(parsed->major, parsed->minor), parsed->inode};
      if (!wanted(original, file.device)) continue;
      const std::uint64_t length = parsed->end - parsed->start;
      // One holder per file and process: a library is mapped 4-5 times.
      auto same = std::find_if(index_.holders_.begin() + static_cast<std::ptrdiff_t>(first_of_pid),
                               index_.holders_.end(), [&](const Holder& holder) {
                                 return holder.how == HoldKind::kMap && holder.file == file;
                               });
      if (same != index_.holders_.end()) {
        same->size_bytes += length;
        continue;
      }
      add(pid, HoldKind::kMap, -1, file, parsed->path, deleted, length);
      if (deleted) size_from_map_files(pid_fd, line, index_.holders_.back());
    }
  }

  // A deleted file's real size: stat of /proc/<pid>/map_files/<range> (root only).
  static void size_from_map_files(int pid_fd, std::string_view line, Holder& holder) {
    const std::size_t blank = line.find(' ');
    if (blank == std::string_view::npos || blank > 64) return;
    std::string name = "map_files/";
    name.append(line.substr(0, blank));
    struct stat info {};
    if (::fstatat(pid_fd, name.c_str(), &info, 0) == 0) {
      holder.size_bytes = static_cast<std::uint64_t>(info.st_size);
    }
  }

  void scan_link(int pid_fd, int pid, const char* name, HoldKind how) {
    std::array<char, 4096> target{};
    const ssize_t got = ::readlinkat(pid_fd, name, target.data(), target.size());
    if (got <= 0) {
      if (got < 0 && refused(errno)) mark_unreadable(pid);
      return;  // kernel threads have no exe
    }
    bool deleted = false;
    const std::string_view shown(target.data(), static_cast<std::size_t>(got));
    const std::string_view original = strip_deleted(shown, deleted);
    if (devices_.empty() && !path_wanted(original)) return;
    struct stat info {};
    if (::fstatat(pid_fd, name, &info, 0) != 0) return;
    const auto device = static_cast<std::uint64_t>(info.st_dev);
    if (!wanted(original, device)) return;
    add(pid, how, -1, {device, static_cast<std::uint64_t>(info.st_ino)}, shown, deleted,
        static_cast<std::uint64_t>(info.st_size));
  }

  // comm, cmdline and the real uid, read only for pids that hold something.
  void describe(int pid_fd, int pid) {
    ProcessInfo info;
    info.pid = pid;
    std::string text;
    if (read_at(pid_fd, "comm", text, 256)) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      info.command = text;
    }
    if (read_at(pid_fd, "cmdline", text, 4096)) {
      while (!text.empty() && text.back() == '\0') text.pop_back();
      std::replace(text.begin(), text.end(), '\0', ' ');
      info.cmdline = text;
    }
    if (read_at(pid_fd, "status", text, 8192)) {
      const std::size_t at = text.find("\nUid:");
      if (at != std::string::npos) {
        std::size_t start = at + 5;
        while (start < text.size() && (text[start] == '\t' || text[start] == ' ')) ++start;
        std::size_t stop = start;
        while (stop < text.size() && text[stop] >= '0' && text[stop] <= '9') ++stop;
        std::from_chars(text.data() + start, text.data() + stop, info.uid);
      }
    } else {
      struct stat owner {};
      if (::fstat(pid_fd, &owner) == 0) info.uid = owner.st_uid;
    }
    info.user = names_.name(info.uid);
    index_.processes_.emplace(pid, std::move(info));
  }

  void finish() {
    std::stable_sort(index_.holders_.begin(), index_.holders_.end(),
                     [](const Holder& a, const Holder& b) { return a.pid < b.pid; });
    std::sort(index_.unreadable_.begin(), index_.unreadable_.end());
    index_.unreadable_.erase(std::unique(index_.unreadable_.begin(), index_.unreadable_.end()),
                             index_.unreadable_.end());
    index_.by_inode_.reserve(index_.holders_.size());
    for (std::size_t i = 0; i < index_.holders_.size(); ++i) {
      index_.by_inode_.emplace(index_.holders_[i].file.inode, i);
    }
  }

  const Context& context_;
  const ScanOptions& options_;
  UserNames names_;
  std::unordered_set<std::uint64_t> devices_;
  std::vector<std::string> prefixes_;
  std::unordered_set<int> wanted_pids_;
  int self_pid_ = -1;
  std::string maps_text_;
  InUseIndex index_;
};

Result<InUseIndex> scan_in_use(const Context& context, const ScanOptions& options) {
  return InUseScanner(context, options).run();
}

}  // namespace headroom
