// The scan behind InUseIndex: every pid directory of <root>/proc, read with
// openat/getdents64/readlinkat/fstatat relative to directory fds, on two
// threads. Measured with perf on 1,000 processes (bench/who/run) the cost is
// almost all kernel work: generating maps text (d_path of every mapped file),
// readlinkat of fd/cwd/root/exe links and the opens. So per process: no
// std::string or std::filesystem path is built, link targets are compared by
// prefix before any stat, buffers are allocated once per thread and never
// zero-filled, and command/user are read only for processes that hold
// something (status only when the /proc/<pid> owner cannot be trusted).
//
// Two shortcuts give the same answer with less kernel work:
// - On the live host a process without an exe (a kernel thread, or one that
//   has exited: its mm and files are gone) has an empty fd/ and an empty maps:
//   exe is read first and, when it is missing, fd/ and maps are not opened
//   (cwd and root still are: a kernel thread's are "/").
// - On the live host, with a device filter alone (check, clean, du -x, watch),
//   the device is tested first: fd, cwd, root and exe links are stat'ed (statx
//   from cached attributes) and read (readlinkat, a d_path in the kernel) only
//   when they are on a wanted device, and maps is walked with the PROCMAP_QUERY ioctl
//   (Linux 6.11+: the same device and inode columns, no text, no path), the
//   name asked for a matching mapping only. Older kernels: the text.
//
// As root, a path scan of the live host reads the fds and mappings with BPF task
// iterators instead (scan_by_iterators, core/kernel/task_iterators.h), where they give
// this same answer; /proc is the fallback.
//
// A recorded tree (root prefix other than "/") keeps paths, not identities:
// its link targets and maps paths are resolved under the root prefix, so a
// fixture's /proc/<pid>/fd/3 -> /dev/shm/x names the fixture's /dev/shm/x.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <functional>
#include <iterator>
#include <memory>
#include <thread>
#include <unordered_set>

#include "core/inuse/inuse_index.h"
#include "core/inuse/user_names.h"
#include "core/kernel/mountinfo.h"
#include "core/kernel/proc_maps.h"
#include "core/kernel/proc_pid_stat.h"
#include "core/kernel/proc_pid_status.h"
#include "core/kernel/sysvipc_shm.h"
#include "core/kernel/task_iterators.h"
#include "core/threads.h"
#include "core/unique_fd.h"
#include "core/walk/dirents.h"

namespace headroom {

namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";
constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
// Below this many pids a second thread costs more than it saves.
constexpr std::size_t kParallelMinimum = 64;
constexpr std::size_t kPidsPerClaim = 8;

bool parse_int(std::string_view text, int& value) {
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && result.ptr == text.data() + text.size() && !text.empty();
}

bool refused(int error) { return error == EACCES || error == EPERM; }

std::string_view strip_deleted(std::string_view path, bool& deleted) {
  deleted = path.size() > kDeletedSuffix.size() &&
            path.substr(path.size() - kDeletedSuffix.size()) == kDeletedSuffix;
  if (deleted) path.remove_suffix(kDeletedSuffix.size());
  return path;
}

// A growable byte buffer that is never zero-filled (std::string would be, per read).
class ReadBuffer {
 public:
  // Reads the pseudo-file `name` below `dir_fd` to EOF (at most `limit` bytes);
  // nullopt with errno set when it cannot be opened or read. `whole_at_once`:
  // the file is produced in one piece (single_open seq_files such as comm and
  // status, and cmdline), so a read shorter than asked is the end: one read
  // syscall instead of two. Not for maps, whose seq_file returns short reads.
  std::optional<std::string_view> read(int dir_fd, const char* name, std::size_t limit,
                                       bool whole_at_once = false) {
    const UniqueFd file(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!file.ok()) return std::nullopt;
    std::size_t used = 0;
    for (;;) {
      if (capacity_ - used < kMinimumRead) grow(used);
      const ssize_t got = ::read(file.get(), data_.get() + used, capacity_ - used);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return std::nullopt;
      if (got == 0) break;
      const std::size_t asked = capacity_ - used;
      used += static_cast<std::size_t>(got);
      if (used >= limit || (whole_at_once && static_cast<std::size_t>(got) < asked)) break;
    }
    return std::string_view(data_.get(), std::min(used, limit));
  }

 private:
  static constexpr std::size_t kMinimumRead = 16384;
  void grow(std::size_t used) {
    const std::size_t capacity = std::max<std::size_t>(capacity_ * 2, 65536);
    auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
    std::copy_n(data_.get(), used, bigger.get());
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
};

// "<pid>/<leaf>" relative to the /proc fd: one path walk instead of an
// openat + close of the pid directory per process (2 of ~17 syscalls each).
class PidPath {
 public:
  explicit PidPath(int pid) {
    digits_ = static_cast<std::size_t>(std::to_chars(text_.data(), text_.data() + 16, pid).ptr -
                                       text_.data());
  }
  /// "<pid>", NUL-terminated; valid until the next call.
  [[nodiscard]] const char* dir() {
    text_[digits_] = '\0';
    return text_.data();
  }
  /// "<pid>/<leaf>", NUL-terminated (a leaf is at most ~100 bytes); valid until the next call.
  [[nodiscard]] const char* at(std::string_view leaf) {
    const std::size_t length = std::min(leaf.size(), text_.size() - digits_ - 2);
    text_[digits_] = '/';
    std::copy_n(leaf.data(), length, text_.data() + digits_ + 1);
    text_[digits_ + 1 + length] = '\0';
    return text_.data();
  }

 private:
  std::array<char, 128> text_{};
  std::size_t digits_ = 0;
};

// What one thread found; merged into the index at the end.
struct Partial {
  std::vector<Holder> holders;
  std::vector<ProcessInfo> processes;
  std::vector<int> unreadable;
};

// Per-thread scratch space, allocated once.
struct Scratch {
  std::unique_ptr<char[]> dirents = std::make_unique_for_overwrite<char[]>(walk::kDirentBufferSize);
  std::array<char, 4096> link{};
  ReadBuffer text;
};

}  // namespace

/// Fills an InUseIndex; one instance per scan.
class InUseScanner {
 public:
  InUseScanner(const Context& context, const ScanOptions& options)
      : context_(context), options_(options), live_(context.root.is_live()) {
    devices_.insert(options.devices.begin(), options.devices.end());
    for (const auto& prefix : options.path_prefixes) prefixes_.push_back(prefix.native());
    wanted_pids_.insert(options.pids.begin(), options.pids.end());
  }

  Result<InUseIndex> run() {
    const std::filesystem::path proc = context_.root.proc();
    const UniqueFd proc_fd(::open(proc.c_str(), kDirectoryFlags));
    if (!proc_fd.ok()) return fail(Error::from_errno(errno, proc.string()));
    const int self_pid = own_pid(proc_fd.get());
    const auto mounts = read_mountinfo(context_);
    if (mounts) index_.hidepid_ = hidepid_active(*mounts);
    open_gate(mounts ? &*mounts : nullptr);
    index_.outer_pid_namespaces_hidden_ = !sees_initial_pid_namespace(context_);

    std::vector<int> pids;
    Scratch scratch;
    (void)walk::for_each_dirent(proc_fd.get(), scratch.dirents.get(), walk::kDirentBufferSize,
                                [&](std::string_view name, unsigned char) {
                                  int pid = 0;
                                  if (!parse_int(name, pid)) return;
                                  if (!wanted_pids_.empty() && wanted_pids_.count(pid) == 0) return;
                                  if (options_.exclude_self && pid == self_pid) return;
                                  pids.push_back(pid);
                                });
    index_.scanned_ = pids.size();
    if (!scan_by_iterators(proc_fd.get(), self_pid, pids, mounts ? &*mounts : nullptr, scratch)) {
      scan_all(proc_fd.get(), pids, scratch);
    }

    if (options_.include_sysv) {
      if (auto segments = read_sysvipc_shm(context_)) {
        index_.sysv_ = std::move(*segments);
      } else {
        index_.sysv_error_ = segments.error();
      }
    }
    return std::move(index_);
  }

 private:
  // The pid of "self" as the scanned /proc names it (our pid in its pid namespace).
  static int own_pid(int proc_fd) {
    std::array<char, 64> buffer{};
    const ssize_t got = ::readlinkat(proc_fd, "self", buffer.data(), buffer.size() - 1);
    int pid = -1;
    if (got > 0)
      (void)parse_int(std::string_view(buffer.data(), static_cast<std::size_t>(got)), pid);
    return pid;
  }

  [[nodiscard]] static bool hidepid_active(const std::vector<MountEntry>& mounts) {
    const MountEntry* proc_mount = find_mount(mounts, "/proc");
    if (proc_mount == nullptr || proc_mount->fstype != "proc") return false;
    for (const std::string& source : {proc_mount->super_options, proc_mount->mount_options}) {
      MountEntry probe;
      probe.super_options = source;
      const auto value = probe.option("hidepid");
      if (value && *value != "0" && *value != "off") return true;
    }
    return false;
  }

  // On the live host, the devices a wanted file can be on, when they are known: those
  // asked for (no path filter), or those of the mounts on the way to and below every
  // path asked for, when each of them gives all its files its own device (devices_below:
  // a file opened before a later mount hid its directory still reads as under it). A
  // file of another mount namespace whose path reads as one under a wanted path but is
  // on no such device is not the file asked about (wanted). A scan by device tests the
  // device first, by stat (no d_path) and PROCMAP_QUERY (no maps text). A path scan
  // does not: the root filesystem is on the way to every path, and it holds most
  // processes' executables, libraries and working directories, so stat, readlink and a
  // name per mapping of each cost more than the readlink and the maps text alone (1,000
  // sleepers: 131 ms CPU against 101 ms). It tests the device of a file whose name matched.
  // Without a mount table the devices below a path are not known.
  void open_gate(const std::vector<MountEntry>* mounts) {
    if (!live_) return;
    if (prefixes_.empty()) {
      gate_ = devices_;
      gated_ = checked_ = !gate_.empty();
      return;
    }
    if (!devices_.empty() || mounts == nullptr) return;
    for (const auto& prefix : options_.path_prefixes) {
      const auto devices = devices_below(*mounts, prefix);
      if (!devices) {
        gate_.clear();
        return;
      }
      gate_.insert(devices->begin(), devices->end());
    }
    checked_ = !gate_.empty();
  }

  // The gate's stat through a magic link: the target's device, inode and size
  // without reading a path, and from the attributes in memory (AT_STATX_DONT_SYNC:
  // NFS or FUSE ask no server, so a holder on a dead mount cannot hang the scan).
  // False, errno set, when it cannot be had. A sandbox whose seccomp profile predates
  // statx refuses it (EPERM, or ENOSYS, on which glibc's own stand-in refuses
  // AT_STATX_DONT_SYNC with EINVAL): then fstatat, which may ask the server, rather than
  // no answer at all.
  [[nodiscard]] static bool gate_stat(int dir_fd, const char* name, struct stat& info) {
    struct statx attributes {};
    if (::statx(dir_fd, name, AT_STATX_DONT_SYNC, STATX_INO | STATX_SIZE, &attributes) != 0) {
      const bool refused = errno == ENOSYS || errno == EPERM || errno == EINVAL;
      return refused && ::fstatat(dir_fd, name, &info, 0) == 0;
    }
    info.st_dev = makedev(attributes.stx_dev_major, attributes.stx_dev_minor);
    info.st_ino = attributes.stx_ino;
    info.st_size = static_cast<off_t>(attributes.stx_size);
    return true;
  }
  [[nodiscard]] bool in_gate(const struct stat& info) const {
    return gate_.count(file_id_of(info).device) > 0;
  }

  // Two threads claim pids in small batches; each keeps its own results.
  void scan_all(int proc_fd, const std::vector<int>& pids, Scratch& scratch) {
    std::atomic<std::size_t> next{0};
    const auto work = [&](Partial& out, Scratch& mine) {
      for (;;) {
        const std::size_t first = next.fetch_add(kPidsPerClaim, std::memory_order_relaxed);
        if (first >= pids.size()) return;
        const std::size_t last = std::min(first + kPidsPerClaim, pids.size());
        for (std::size_t i = first; i < last; ++i) scan_process(proc_fd, pids[i], out, mine);
      }
    };
    std::array<Partial, 2> partials;
    if (pids.size() >= kParallelMinimum) {
      // Without a second thread (a task limit) this one takes every pid.
      auto helper = try_start_thread([&] {
        Scratch own;
        work(partials[1], own);
      });
      work(partials[0], scratch);
      if (helper) helper->join();
    } else {
      work(partials[0], scratch);
    }
    merge(partials);
  }

  // A path scan of the live host by the kernel's task iterators (TaskIterators): the
  // same holders as scan_all, from one walk of every fd table and mapping in the kernel
  // instead of a readlink per fd and the maps text of every process. Only where the two
  // agree by construction: this process's own pid namespace is the one /proc shows, no
  // overlay or FUSE mount is in its mount namespace (their mappings are backing files,
  // which the kernel names differently in maps), and a process of another mount
  // namespace (its own mounts unseen) is scanned through /proc as before. cwd, root and
  // exe are read from /proc for every process, while the mappings are walked.
  // False, nothing changed, when any of that does not hold or the kernel refuses (not
  // root, lockdown, no BTF): scan_all then.
  bool scan_by_iterators(int proc_fd, int self_pid, const std::vector<int>& pids,
                         const std::vector<MountEntry>* mounts, Scratch& scratch) {
    // (Every kind or /proc: no caller asks for less in a path scan.)
    if (!live_ || !options_.kernel_iterators || !options_.include_maps || prefixes_.empty() ||
        !devices_.empty() || !wanted_pids_.empty() || mounts == nullptr || self_pid != ::getpid() ||
        !proc_is_own_pid_namespace(proc_fd, scratch)) {
      return false;
    }
    if (std::getenv("HEADROOM_NO_BPF") != nullptr) return false;
    if (!std::is_sorted(pids.begin(), pids.end())) return false;  // /proc lists them in order
    for (const MountEntry& mount : *mounts) {
      if (mount.fstype == "overlay" || mount.fstype.starts_with("fuse")) return false;
    }
    // cwd, root and exe of every pid, by both threads once their walk is done, in
    // batches of pids; each pid's links in its own slot, in the order of the /proc scan.
    std::vector<std::vector<Holder>> links(pids.size());
    std::array<Partial, 2> refused;  // unreadable pids, per thread
    std::atomic<std::size_t> next_link{0};
    std::atomic<int> readers{0};
    const auto read_links = [&] {
      const int me = readers.fetch_add(1);
      Scratch own;
      Scratch& mine = me == 0 ? scratch : own;
      Partial out;
      for (;;) {
        const std::size_t first = next_link.fetch_add(kPidsPerClaim, std::memory_order_relaxed);
        if (first >= pids.size()) break;
        for (std::size_t i = first; i < std::min(first + kPidsPerClaim, pids.size()); ++i) {
          PidPath path(pids[i]);
          // exe too: a process may have unmapped its executable (a packer's stub, a
          // restored checkpoint), so no wanted mapping says that it holds it.
          scan_link(proc_fd, path.at("cwd"), pids[i], HoldKind::kCwd, out, mine);
          scan_link(proc_fd, path.at("root"), pids[i], HoldKind::kRoot, out, mine);
          scan_link(proc_fd, path.at("exe"), pids[i], HoldKind::kExe, out, mine);
          std::move(out.holders.begin(), out.holders.end(), std::back_inserter(links[i]));
          out.holders.clear();
        }
      }
      refused[me == 0 ? 0 : 1].unreadable = std::move(out.unreadable);
    };
    auto iterators = TaskIterators::load(prefixes_);
    if (!iterators) return false;
    auto found = iterators->run(options_.include_fds, options_.include_maps,
                                options_.include_cwd_root_exe ? std::function<void()>(read_links)
                                                              : std::function<void()>());
    if (!found) return false;

    std::unordered_map<int, const KernelTask*> tasks;
    std::uint64_t own_namespace = 0;
    for (const KernelTask& task : found->tasks) {
      tasks.emplace(task.pid, &task);
      if (task.pid == self_pid) own_namespace = task.mount_namespace;
    }
    if (own_namespace == 0) return false;
    Partial out;
    auto file = found->files.begin();
    auto mapping = found->mappings.begin();
    for (std::size_t i = 0; i < pids.size(); ++i) {
      const int pid = pids[i];
      const auto task = tasks.find(pid);
      // Records of pids /proc did not list (started since): not scanned, as by /proc.
      while (file != found->files.end() && file->pid < pid) ++file;
      while (mapping != found->mappings.end() && mapping->pid < pid) ++mapping;
      const auto files_end =
          std::find_if(file, found->files.end(), [&](const KernelFile& f) { return f.pid != pid; });
      const auto mappings_end = std::find_if(mapping, found->mappings.end(),
                                             [&](const KernelFile& f) { return f.pid != pid; });
      const std::size_t before = out.holders.size();
      const auto unnamed = [](const KernelFile& f) { return f.name.empty(); };
      if (task == tasks.end() || task->second->mount_namespace != own_namespace ||
          std::any_of(file, files_end, unnamed) || std::any_of(mapping, mappings_end, unnamed)) {
        // Gone, started since, in a mount namespace of its own, or a file the programs
        // could not name as /proc does (longer than a page; a mapping on a mount outside
        // this mount namespace): through /proc.
        scan_process(proc_fd, pid, out, scratch);
      } else {
        PidPath path(pid);
        for (; file != files_end; ++file) add_kernel_fd(proc_fd, path, *file, out);
        const std::size_t first_mapping = out.holders.size();
        for (; mapping != mappings_end; ++mapping) {
          add_kernel_mapping(proc_fd, path, *mapping, first_mapping, out);
        }
        // cwd, root, exe
        std::move(links[i].begin(), links[i].end(), std::back_inserter(out.holders));
        if (out.holders.size() > before) {
          if (options_.include_cmdline) {
            describe(proc_fd, path, pid, out, scratch);
          } else {
            ProcessInfo& info = out.processes.emplace_back();
            info.pid = pid;
            info.uid = task->second->euid;
            info.command.assign(task->second->command);
          }
        }
      }
      file = files_end;
      mapping = mappings_end;
    }
    for (const Partial& partial : refused) {
      out.unreadable.insert(out.unreadable.end(), partial.unreadable.begin(),
                            partial.unreadable.end());
    }
    std::array<Partial, 2> partials{std::move(out), Partial{}};
    merge(partials);
    index_.by_kernel_iterators_ = true;
    return true;
  }

  // /proc numbers pids as this process's own pid namespace does: its NSpid line (our pid
  // in each namespace from /proc's down to ours) has one number. (That /proc/self is our
  // getpid() is not enough: a /proc of an outer namespace can number this process alike
  // by chance, and the iterators then lend one namespace's pid to a process of the other.)
  [[nodiscard]] static bool proc_is_own_pid_namespace(int proc_fd, Scratch& scratch) {
    const auto status = scratch.text.read(proc_fd, "self/status", 8192, true);
    if (!status) return false;
    constexpr std::string_view kKey = "\nNSpid:";
    const std::size_t at = status->find(kKey);
    if (at == std::string_view::npos) return false;
    std::string_view numbers = status->substr(at + kKey.size());
    numbers = numbers.substr(0, numbers.find('\n'));
    while (!numbers.empty() && (numbers.front() == '\t' || numbers.front() == ' ')) {
      numbers.remove_prefix(1);
    }
    return !numbers.empty() && numbers.find_first_of("\t ") == std::string_view::npos;
  }

  // A wanted fd: on a filesystem of the device check (one device for all its files: st_dev,
  // st_ino and st_size are the superblock's device, the inode number and i_size) as the
  // kernel reported it; elsewhere (btrfs, NFS) stat'ed through /proc as the scan does.
  void add_kernel_fd(int proc_fd, PidPath& path, const KernelFile& found, Partial& out) const {
    if (found.name.empty() || found.name.front() != '/') return;
    bool deleted = false;
    const std::string_view original = strip_deleted(found.name, deleted);
    if (!path_wanted(original)) return;
    FileId file{found.device, found.inode};
    std::uint64_t size = found.size;
    if (!checked_) {
      std::array<char, 32> leaf{};
      std::snprintf(leaf.data(), leaf.size(), "fd/%d", found.fd);
      struct stat info {};
      if (::fstatat(proc_fd, path.at(leaf.data()), &info, 0) != 0) return;  // closed since
      file = file_id_of(info);
      size = static_cast<std::uint64_t>(info.st_size);
    }
    if (!wanted(original, file.device)) return;
    add(out, found.pid, HoldKind::kFd, found.fd, file, found.name, deleted, size);
  }

  void add_kernel_mapping(int proc_fd, PidPath& path, const KernelFile& found,
                          std::size_t first_of_pid, Partial& out) const {
    if (found.inode == 0 || found.name.empty() || found.name.front() != '/') return;
    // The maps text escapes a newline in a name; so does the index.
    std::string shown(found.name);
    for (std::size_t at = 0; (at = shown.find('\n', at)) != std::string::npos; at += 4) {
      shown.replace(at, 1, "\\012");
    }
    bool deleted = false;
    const std::string_view original = strip_deleted(shown, deleted);
    if (!path_wanted(original)) return;
    const FileId file{found.device, found.inode};
    if (!wanted(original, file.device)) return;
    const std::uint64_t length = found.end - found.start;
    if (merge_mapping(out, first_of_pid, file, length)) return;
    add(out, found.pid, HoldKind::kMap, -1, file, shown, deleted, length);
    if (deleted) {
      MapsLine range;
      range.start = found.start;
      range.end = found.end;
      size_from_map_files(proc_fd, path, range_text(range), out.holders.back());
    }
  }

  // The device filter forces a stat; the path filter alone can skip one.
  [[nodiscard]] bool path_wanted(std::string_view path) const {
    if (prefixes_.empty()) return devices_.empty();
    return std::any_of(prefixes_.begin(), prefixes_.end(),
                       [&](const std::string& prefix) { return path_at_or_under(path, prefix); });
  }
  [[nodiscard]] bool wanted(std::string_view path, std::uint64_t device) const {
    if (checked_ && gate_.count(device) == 0) return false;
    if (prefixes_.empty() && devices_.empty()) return true;
    return devices_.count(device) > 0 || path_wanted(path);
  }

  static void mark_unreadable(Partial& out, int pid) {
    if (out.unreadable.empty() || out.unreadable.back() != pid) out.unreadable.push_back(pid);
  }

  static void add(Partial& out, int pid, HoldKind how, int fd, FileId file, std::string_view path,
                  bool deleted, std::uint64_t size) {
    Holder& holder = out.holders.emplace_back();
    holder.pid = pid;
    holder.how = how;
    holder.fd = fd;
    holder.file = file;
    holder.path.assign(path);
    holder.deleted = deleted;
    holder.size_bytes = size;
  }

  void scan_process(int proc_fd, int pid, Partial& out, Scratch& scratch) {
    PidPath path(pid);
    const std::size_t before = out.holders.size();
    // A pid that exited meanwhile fails every step with ENOENT/ESRCH: nothing is added.
    bool has_memory = true;
    if (options_.include_cwd_root_exe) {
      // exe first: on the live host ENOENT means no mm (a kernel thread, or exited), so
      // no fds and no maps. A recorded tree may simply not have recorded the link.
      const int exe = scan_link(proc_fd, path.at("exe"), pid, HoldKind::kExe, out, scratch);
      has_memory = !live_ || exe != ENOENT;
    }
    const std::size_t after_exe = out.holders.size();
    if (has_memory && options_.include_fds) scan_fds(proc_fd, path, pid, out, scratch);
    if (has_memory && options_.include_maps) scan_maps(proc_fd, path, pid, out, scratch);
    if (options_.include_cwd_root_exe) {
      scan_link(proc_fd, path.at("cwd"), pid, HoldKind::kCwd, out, scratch);
      scan_link(proc_fd, path.at("root"), pid, HoldKind::kRoot, out, scratch);
      // The exe holder goes last, where the order fd, mmap, cwd, root, exe puts it.
      const auto exe = out.holders.begin() + static_cast<std::ptrdiff_t>(before);
      if (after_exe > before) std::rotate(exe, exe + 1, out.holders.end());
    }
    if (out.holders.size() > before) describe(proc_fd, path, pid, out, scratch);
  }

  // The identity of a link target: stat through the magic link on the live
  // host (works for deleted files too); under a root prefix, the recorded
  // path re-rooted (a deleted target has nothing there to stat).
  [[nodiscard]] bool link_identity(int dir_fd, const char* name, std::string_view original,
                                   bool deleted, struct stat& info) const {
    if (live_) return ::fstatat(dir_fd, name, &info, 0) == 0;
    if (deleted) return false;
    return ::stat(context_.root.host(std::string(original)).c_str(), &info) == 0;
  }

  void scan_fds(int proc_fd, PidPath& path, int pid, Partial& out, Scratch& scratch) {
    const UniqueFd fd_dir(::openat(proc_fd, path.at("fd"), kDirectoryFlags));
    if (!fd_dir.ok()) {
      if (refused(errno)) mark_unreadable(out, pid);
      return;
    }
    char* target = scratch.link.data();
    (void)walk::for_each_dirent(
        fd_dir.get(), scratch.dirents.get(), walk::kDirentBufferSize,
        [&](std::string_view fd_name, unsigned char) {
          struct stat info {};
          // Through the gate, the link is read only for a file on a wanted device.
          if (gated_ && (!gate_stat(fd_dir.get(), fd_name.data(), info) || !in_gate(info))) {
            return;
          }
          const ssize_t got =
              ::readlinkat(fd_dir.get(), fd_name.data(), target, scratch.link.size());
          if (got <= 0 || target[0] != '/') return;  // socket:[..], pipe:[..], anon_inode:..
          bool deleted = false;
          const std::string_view shown(target, static_cast<std::size_t>(got));
          const std::string_view original = strip_deleted(shown, deleted);
          if (devices_.empty() && !path_wanted(original)) return;
          if (!gated_ && !link_identity(fd_dir.get(), fd_name.data(), original, deleted, info)) {
            return;
          }
          const FileId file = file_id_of(info);
          if (!wanted(original, file.device)) return;
          int fd_number = -1;
          (void)parse_int(fd_name, fd_number);
          add(out, pid, HoldKind::kFd, fd_number, file, shown, deleted,
              static_cast<std::uint64_t>(info.st_size));
        });
  }

  // The identity of a mapped file: the maps columns on the live host. Under a
  // root prefix, the re-rooted file when the tree has it (for a deleted one the
  // recorded inode on its directory's device), else the recorded columns.
  [[nodiscard]] FileId map_identity(const MapsLine& line, std::string_view original,
                                    bool deleted) const {
    FileId recorded{make_device(line.major, line.minor), line.inode};
    if (live_) return recorded;
    const std::filesystem::path rooted = context_.root.host(std::string(original));
    struct stat info {};
    if (!deleted && ::stat(rooted.c_str(), &info) == 0) return file_id_of(info);
    if (deleted && ::stat(rooted.parent_path().c_str(), &info) == 0) {
      recorded.device = static_cast<std::uint64_t>(info.st_dev);
    }
    return recorded;
  }

  void scan_maps(int proc_fd, PidPath& path, int pid, Partial& out, Scratch& scratch) {
    if (gated_ && !no_procmap_query_.load(std::memory_order_relaxed) &&
        scan_maps_by_query(proc_fd, path, pid, out)) {
      return;
    }
    const auto maps = scratch.text.read(proc_fd, path.at("maps"), std::size_t{64} << 20);
    if (!maps) {
      if (refused(errno)) mark_unreadable(out, pid);
      return;
    }
    const std::size_t first_of_pid = out.holders.size();
    std::string_view text = *maps;
    while (!text.empty()) {
      const std::size_t newline = text.find('\n');
      const std::string_view line = text.substr(0, newline);
      text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
      // Anonymous memory, [heap], [stack] and the like have no '/': skip them unparsed.
      if (line.find('/') == std::string_view::npos) continue;
      const auto parsed = parse_maps_line(line);
      if (!parsed || parsed->inode == 0 || parsed->path.empty() || parsed->path.front() != '/') {
        continue;
      }
      bool deleted = false;
      const std::string_view original = strip_deleted(parsed->path, deleted);
      if (devices_.empty() && !path_wanted(original)) continue;
      const FileId file = map_identity(*parsed, original, deleted);
      if (!wanted(original, file.device)) continue;
      const std::uint64_t length = parsed->end - parsed->start;
      if (merge_mapping(out, first_of_pid, file, length)) continue;
      add(out, pid, HoldKind::kMap, -1, file, parsed->path, deleted, length);
      if (deleted) size_from_map_files(proc_fd, path, line, out.holders.back());
    }
  }

  // One holder per file and process: a library is mapped 4-5 times.
  static bool merge_mapping(Partial& out, std::size_t first_of_pid, FileId file,
                            std::uint64_t length) {
    auto same = std::find_if(
        out.holders.begin() + static_cast<std::ptrdiff_t>(first_of_pid), out.holders.end(),
        [&](const Holder& holder) { return holder.how == HoldKind::kMap && holder.file == file; });
    if (same == out.holders.end()) return false;
    same->size_bytes += length;
    return true;
  }

  // The maps walk of the scan by device, by PROCMAP_QUERY: the same holders as
  // the text (the same columns, the same order), the name read only for a mapping on
  // a wanted device. False when the text must be read instead (an old kernel, or a
  // mapping whose name cannot be had); nothing of this pid's maps is kept then.
  bool scan_maps_by_query(int proc_fd, PidPath& path, int pid, Partial& out) {
    const UniqueFd maps(::openat(proc_fd, path.at("maps"), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!maps.ok()) {
      if (refused(errno)) mark_unreadable(out, pid);
      return true;
    }
    const std::size_t first_of_pid = out.holders.size();
    std::string name;
    MapsLine mapping;
    for (std::uint64_t address = 0;; address = mapping.end) {
      const int error = query_file_mapping(maps.get(), address, mapping);
      if (error == ENOENT || error == ESRCH) return true;
      if (error == ENOTTY || error == EINVAL) no_procmap_query_.store(true);
      if (error != 0) break;
      const FileId file{make_device(mapping.major, mapping.minor), mapping.inode};
      if (mapping.inode == 0 || gate_.count(file.device) == 0) continue;
      const std::uint64_t length = mapping.end - mapping.start;
      if (merge_mapping(out, first_of_pid, file, length)) continue;
      if (query_mapping_name(maps.get(), mapping.start, name) != 0) break;
      if (name.empty() || name.front() != '/') continue;
      bool deleted = false;
      (void)strip_deleted(name, deleted);
      add(out, pid, HoldKind::kMap, -1, file, name, deleted, length);
      if (deleted) size_from_map_files(proc_fd, path, range_text(mapping), out.holders.back());
    }
    out.holders.resize(first_of_pid);
    return false;
  }

  // "start-end" in hex, as map_files/ names a mapping.
  static std::string range_text(const MapsLine& mapping) {
    return fmt::format("{:x}-{:x}", mapping.start, mapping.end);
  }

  // A deleted file's real size: stat of /proc/<pid>/map_files/<range> (root only).
  static void size_from_map_files(int proc_fd, PidPath& path, std::string_view line,
                                  Holder& holder) {
    const std::size_t blank =
        std::min(line.find(' '), line.size());  // "start-end ..." or "start-end"
    if (blank > 64) return;
    std::array<char, 80> leaf{};
    constexpr std::string_view kDir = "map_files/";
    std::copy(kDir.begin(), kDir.end(), leaf.begin());
    std::copy_n(line.begin(), blank, leaf.begin() + static_cast<std::ptrdiff_t>(kDir.size()));
    struct stat info {};
    if (::fstatat(proc_fd, path.at(leaf.data()), &info, 0) == 0) {
      holder.size_bytes = static_cast<std::uint64_t>(info.st_size);
    }
  }

  // Returns the errno of reading the link (ENOENT: kernel threads have no exe), else 0.
  int scan_link(int proc_fd, const char* name, int pid, HoldKind how, Partial& out,
                Scratch& scratch) {
    struct stat info {};
    // Through the gate, the link is read only for a file on a wanted device.
    if (gated_) {
      if (!gate_stat(proc_fd, name, info)) {
        const int error = errno;
        if (refused(error)) mark_unreadable(out, pid);
        return error;
      }
      if (!in_gate(info)) return 0;
    }
    char* target = scratch.link.data();
    const ssize_t got = ::readlinkat(proc_fd, name, target, scratch.link.size());
    if (got <= 0) {
      const int error = got < 0 ? errno : ENOENT;
      if (got < 0 && refused(error)) mark_unreadable(out, pid);
      return error;
    }
    bool deleted = false;
    const std::string_view shown(target, static_cast<std::size_t>(got));
    const std::string_view original = strip_deleted(shown, deleted);
    if (devices_.empty() && !path_wanted(original)) return 0;
    if (!gated_ && !link_identity(proc_fd, name, original, deleted, info)) return 0;
    const FileId file = file_id_of(info);
    if (!wanted(original, file.device)) return 0;
    add(out, pid, how, -1, file, shown, deleted, static_cast<std::uint64_t>(info.st_size));
    return 0;
  }

  // Command line, command name and uid, only for pids that hold something.
  // The owner of /proc/<pid> itself is the process's effective uid, a
  // non-dumpable one's too (task_dump_owner makes only the files below it
  // root's; procps relies on it), so the live host reads comm and stat, not
  // status (~5x their kernel work). A recorded tree's directories belong to
  // whoever recorded it: when that is root, its status says whose it is.
  void describe(int proc_fd, PidPath& path, int pid, Partial& out, Scratch& scratch) const {
    ProcessInfo& info = out.processes.emplace_back();
    info.pid = pid;
    const auto command_line = options_.include_cmdline
                                  ? scratch.text.read(proc_fd, path.at("cmdline"), 4096, true)
                                  : std::nullopt;
    if (command_line) {
      std::string_view args = *command_line;
      while (!args.empty() && args.back() == '\0') args.remove_suffix(1);
      info.cmdline.assign(args);
      std::replace(info.cmdline.begin(), info.cmdline.end(), '\0', ' ');
    }
    struct stat owner {};
    if (::fstatat(proc_fd, path.dir(), &owner, 0) == 0 && (live_ || owner.st_uid != 0)) {
      info.uid = owner.st_uid;
      if (auto text = scratch.text.read(proc_fd, path.at("comm"), 256, true)) {
        std::string_view comm = *text;
        while (!comm.empty() && comm.back() == '\n') comm.remove_suffix(1);
        info.command.assign(comm);
      }
      return;
    }
    if (auto text = scratch.text.read(proc_fd, path.at("status"), 8192, true)) {
      if (auto status = parse_proc_status(*text)) {
        info.uid = status->uid;
        info.command = std::move(status->name);
      }
    }
  }

  void merge(std::array<Partial, 2>& partials) {
    UserNames names(context_);
    for (Partial& partial : partials) {
      for (Holder& holder : partial.holders) index_.holders_.push_back(std::move(holder));
      for (ProcessInfo& process : partial.processes) {
        process.user = names.name(process.uid);
        const int pid = process.pid;
        index_.processes_.emplace(pid, std::move(process));
      }
      index_.unreadable_.insert(index_.unreadable_.end(), partial.unreadable.begin(),
                                partial.unreadable.end());
    }
    // A pid's holders were found by one thread, in order: sorting by pid alone is deterministic.
    std::stable_sort(index_.holders_.begin(), index_.holders_.end(),
                     [](const Holder& a, const Holder& b) { return a.pid < b.pid; });
    std::sort(index_.unreadable_.begin(), index_.unreadable_.end());
    index_.unreadable_.erase(std::unique(index_.unreadable_.begin(), index_.unreadable_.end()),
                             index_.unreadable_.end());
    // A kernel thread has no files, cwd or maps of its own: that it could not be read
    // (every kernel thread, for a caller who is not root) hides nothing.
    std::erase_if(index_.unreadable_, [&](int pid) { return is_kernel_thread(context_, pid); });
    index_.by_inode_.reserve(index_.holders_.size());
    for (std::size_t i = 0; i < index_.holders_.size(); ++i) {
      index_.by_inode_.emplace(index_.holders_[i].file.inode, i);
    }
  }

  const Context& context_;
  const ScanOptions& options_;
  const bool live_;
  // Live host, the devices of wanted files known (open_gate): a file on none of them is
  // not wanted (checked_), and a scan by device tests them first (gated_: stat before
  // readlink, maps by PROCMAP_QUERY).
  bool checked_ = false;
  bool gated_ = false;
  std::unordered_set<std::uint64_t> gate_;
  std::atomic<bool> no_procmap_query_{false};
  std::unordered_set<std::uint64_t> devices_;
  std::vector<std::string> prefixes_;
  std::unordered_set<int> wanted_pids_;
  InUseIndex index_;
};

Result<InUseIndex> scan_in_use(const Context& context, const ScanOptions& options) {
  return InUseScanner(context, options).run();
}

}  // namespace headroom
