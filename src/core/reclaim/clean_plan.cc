// plan_clean: what `headroom clean` would remove, and why each item is safe.
// It removes nothing; apply_clean re-checks every item before touching it.

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/inuse/user_names.h"
#include "core/reclaim/clean.h"
#include "core/reclaim/clean_rules.h"
#include "core/reclaim/proc_net_unix.h"
#include "core/reclaim/shm_survey.h"
#include "core/reclaim/tree_walk.h"
#include "core/units.h"

namespace headroom {

namespace {

std::chrono::seconds age_of(std::chrono::system_clock::time_point now, std::time_t modified) {
  const auto then = std::chrono::system_clock::from_time_t(modified);
  return now > then ? std::chrono::duration_cast<std::chrono::seconds>(now - then)
                    : std::chrono::seconds{0};
}

// "1 (systemd), 523 (sshd)": comm is world-readable even when fd/ and maps are not.
std::string describe_pids(const Context& context, const std::vector<int>& pids) {
  constexpr std::size_t kShown = 10;
  std::string text;
  for (std::size_t i = 0; i < pids.size() && i < kShown; ++i) {
    std::string name =
        context.root.read(context.root.proc(std::to_string(pids[i]) + "/comm"), 256).value_or("?");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    text += fmt::format("{}{} ({})", i == 0 ? "" : ", ", pids[i], name);
  }
  if (pids.size() > kShown) text += fmt::format(" and {} more", pids.size() - kShown);
  return text;
}

std::string pid_csv(const std::vector<int>& pids) {
  std::string text;
  for (int pid : pids) text += (text.empty() ? "" : ",") + std::to_string(pid);
  return text;
}

// The index cannot vouch for files when it could not read every process:
// say which ones, and the two ways forward.
std::string blindness(const Context& context, const std::vector<int>& blocking, bool hidepid,
                      uid_t euid) {
  if (!blocking.empty()) {
    return fmt::format(
        "could not inspect pid {}: permission denied on {} fds and maps, so a file {} would "
        "look unused. {}, or if you are sure {} nothing in /dev/shm or the temp dir, vouch for "
        "{}: --ignore-unreadable {}",
        describe_pids(context, blocking), blocking.size() == 1 ? "its" : "their",
        blocking.size() == 1 ? "it uses" : "they use",
        euid == 0 ? fmt::format("Root cannot read {} here either (a sandbox or another user "
                                "namespace): run headroom where it can",
                                blocking.size() == 1 ? "it" : "them")
                  : std::string("Run as root"),
        blocking.size() == 1 ? "it uses" : "they use", blocking.size() == 1 ? "it" : "them",
        pid_csv(blocking));
  }
  if (hidepid && euid != 0) {
    return "/proc is mounted with hidepid: other users' processes are invisible; run as root";
  }
  return "";
}

class Planner {
 public:
  Planner(const Context& context, const CleanOptions& options)
      : context_(context),
        options_(options),
        names_(context),
        now_(context.syscalls->now()),
        euid_(context.syscalls->effective_uid()) {}

  Result<CleanPlan> run() {
    if (options_.shm) {
      if (auto result = plan_shm(); !result) return fail(result.error());
    }
    if (options_.tmp && plan_.blind_reason.empty()) {
      if (auto result = plan_tmp(); !result) return fail(result.error());
    }
    if (!plan_.blind_reason.empty()) plan_.items.clear();
    for (const CleanItem& item : plan_.items) plan_.total_bytes += item.bytes;
    return std::move(plan_);
  }

 private:
  bool owner_ok(uid_t uid) const { return options_.all_users || uid == euid_; }

  void keep(const std::filesystem::path& path, std::string reason, std::uint64_t bytes = 0) {
    plan_.kept.push_back({path, std::move(reason), bytes});
  }

  void note_index(const InUseIndex& index) {
    plan_.processes_scanned = std::max(plan_.processes_scanned, index.processes_scanned());
    for (int pid : index.unreadable_pids()) plan_.unreadable_pids.push_back(pid);
    std::sort(plan_.unreadable_pids.begin(), plan_.unreadable_pids.end());
    plan_.unreadable_pids.erase(
        std::unique(plan_.unreadable_pids.begin(), plan_.unreadable_pids.end()),
        plan_.unreadable_pids.end());
    const std::vector<int> blocking = blocking_unreadable(index, options_);
    plan_.blocking_pids.insert(plan_.blocking_pids.end(), blocking.begin(), blocking.end());
    if (plan_.blind_reason.empty()) {
      plan_.blind_reason = blindness(context_, blocking, index.hidepid(), euid_);
    }
  }

  Result<void> plan_shm() {
    auto survey = survey_shm(context_);
    if (!survey) return fail(survey.error());
    note_index(survey->index);
    const std::chrono::seconds minimum = minimum_age(options_, false);
    const std::filesystem::path dir = "/dev/shm";
    for (const ShmEntry& entry : survey->entries) {
      const std::filesystem::path path = dir / entry.name;
      const auto age = age_of(now_, std::chrono::system_clock::to_time_t(entry.modified));
      if (!entry.regular()) {
        keep(path, "not a regular file");
      } else if (entry.pattern == "other") {
        keep(path, "not a known segment name (torch_*, nccl-*, sem.*, psm_*, __KMP_*)",
             entry.allocated_bytes);
      } else if (!owner_ok(entry.uid)) {
        keep(path, fmt::format("owned by {} (use --all-users as root)", names_.name(entry.uid)),
             entry.allocated_bytes);
      } else if (!entry.holders.empty()) {
        keep(path, held_reason(survey->index, entry.holders), entry.allocated_bytes);
      } else if (age < minimum) {
        keep(path, fmt::format("modified {} ago (younger than --older-than)", format_duration(age)),
             entry.allocated_bytes);
      } else {
        CleanItem item;
        item.kind = CleanKind::kShmFile;
        item.path = path;
        item.parent = dir;
        item.parent_id = survey->dir_id;
        item.name = entry.name;
        item.id = entry.id;
        item.uid = entry.uid;
        item.owner = names_.name(entry.uid);
        item.bytes = entry.allocated_bytes;
        item.age = age;
        item.why_safe = entry.pattern == "torch"
                            ? "no process has it open or mapped (the pid in a torch_ name is its "
                              "creator, not a holder)"
                            : "no process has it open or mapped";
        plan_.items.push_back(std::move(item));
      }
    }
    for (const SysvSegment& segment : survey->sysv) plan_sysv(segment, minimum);
    return {};
  }

  void plan_sysv(const SysvSegment& segment, std::chrono::seconds minimum) {
    const std::filesystem::path label = fmt::format("sysv shmid {} key 0x{:08x}", segment.shmid,
                                                    static_cast<std::uint32_t>(segment.key));
    const std::time_t last =
        std::max({segment.attach_time, segment.detach_time, segment.change_time});
    const auto age = age_of(now_, last);
    if (segment.attachments != 0) {
      keep(label, fmt::format("attached by {} processes", segment.attachments), segment.size_bytes);
    } else if (!owner_ok(segment.uid)) {
      keep(label, fmt::format("owned by {} (use --all-users as root)", names_.name(segment.uid)),
           segment.size_bytes);
    } else if (age < minimum) {
      keep(label, fmt::format("used {} ago (younger than --older-than)", format_duration(age)),
           segment.size_bytes);
    } else {
      CleanItem item;
      item.kind = CleanKind::kSysvSegment;
      item.path = label;
      item.shmid = segment.shmid;
      item.key = segment.key;
      item.uid = segment.uid;
      item.owner = names_.name(segment.uid);
      item.bytes = segment.size_bytes;
      item.age = age;
      item.why_safe = "no attachments (nattch 0)";
      plan_.items.push_back(std::move(item));
    }
  }

  Result<void> plan_tmp() {
    const std::filesystem::path rooted = context_.root.host(options_.tmp_dir);
    const int dir_fd = ::open(rooted.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0) return fail(Error::from_errno(errno, options_.tmp_dir.string()));
    struct stat dir_info {};
    ::fstat(dir_fd, &dir_info);
    const FileId dir_id = file_id_of(dir_info);
    ScanOptions scan;
    scan.devices = {dir_id.device};
    scan.include_sysv = false;
    auto index = scan_in_use(context_, scan);
    if (!index) {
      ::close(dir_fd);
      return fail(index.error());
    }
    note_index(*index);
    const auto sockets = read_proc_net_unix(context_).value_or(std::unordered_set<std::string>{});
    std::vector<std::string> names;
    if (DIR* stream = ::fdopendir(::dup(dir_fd))) {
      while (const dirent* entry = ::readdir(stream)) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
      }
      ::closedir(stream);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) plan_tmp_entry(dir_fd, dir_id, name, *index, sockets);
    ::close(dir_fd);
    return {};
  }

  void plan_tmp_entry(int dir_fd, FileId dir_id, const std::string& name, const InUseIndex& index,
                      const std::unordered_set<std::string>& sockets) {
    const std::filesystem::path path = options_.tmp_dir / name;
    struct stat info {};
    if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return;
    const FileId id = file_id_of(info);
    if (protected_tmp_name(name))
      return keep(path, "protected name (system sockets or PrivateTmp)");
    if (id.device != dir_id.device) return keep(path, "a mount point (other filesystem)");
    if (!owner_ok(info.st_uid)) return;  // other users' files are not ours to list
    const std::chrono::seconds minimum = minimum_age(options_, true);
    CleanItem item;
    item.path = path;
    item.parent = options_.tmp_dir;
    item.parent_id = dir_id;
    item.name = name;
    item.id = id;
    item.uid = info.st_uid;
    item.owner = names_.name(info.st_uid);
    item.bytes = static_cast<std::uint64_t>(info.st_blocks) * 512;
    std::time_t newest = info.st_mtim.tv_sec;
    std::vector<int> holders = holder_pids(index.holders(id));
    if (S_ISDIR(info.st_mode)) {
      item.kind = CleanKind::kTmpDir;
      const int child =
          ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) return keep(path, fmt::format("could not open: {}", std::strerror(errno)));
      const TreeSummary tree = summarize_tree(child, id.device);
      ::close(child);
      if (tree.crosses_mount) return keep(path, "contains a mount point", tree.allocated_bytes);
      if (!tree.error.empty()) return keep(path, "could not read all of it: " + tree.error);
      for (const FileId& below : tree.ids) {
        const auto pids = holder_pids(index.holders(below));
        holders.insert(holders.end(), pids.begin(), pids.end());
      }
      const auto by_path =
          holder_pids(index.holders_under(context_.root.display(context_.root.host(path))));
      holders.insert(holders.end(), by_path.begin(), by_path.end());
      std::sort(holders.begin(), holders.end());
      holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
      item.bytes = tree.allocated_bytes;
      item.files = tree.entries;
      newest = tree.newest_mtime;
    } else if (S_ISREG(info.st_mode) || S_ISLNK(info.st_mode) || S_ISFIFO(info.st_mode) ||
               S_ISSOCK(info.st_mode)) {
      item.kind = CleanKind::kTmpFile;
      if (S_ISSOCK(info.st_mode) && sockets.count(path.native()) > 0) {
        return keep(path, "a live socket (bound by a process)");
      }
    } else {
      return keep(path, "a device node");
    }
    if (!holders.empty()) return keep(path, held_reason(index, holders), item.bytes);
    item.age = age_of(now_, newest);
    if (item.age < minimum) {
      return keep(path,
                  fmt::format("{}modified {} ago (younger than {})",
                              item.kind == CleanKind::kTmpDir ? "something inside " : "",
                              format_duration(item.age), format_duration(minimum)),
                  item.bytes);
    }
    item.why_safe = fmt::format("no process uses {}; unmodified for {}",
                                item.kind == CleanKind::kTmpDir ? "anything inside" : "it",
                                format_duration(item.age));
    plan_.items.push_back(std::move(item));
  }

  const Context& context_;
  const CleanOptions& options_;
  UserNames names_;
  std::chrono::system_clock::time_point now_;
  uid_t euid_;
  CleanPlan plan_;
};

}  // namespace

std::string_view to_string(CleanKind kind) {
  switch (kind) {
    case CleanKind::kShmFile:
      return "shm_file";
    case CleanKind::kSysvSegment:
      return "sysv_segment";
    case CleanKind::kTmpFile:
      return "tmp_file";
    case CleanKind::kTmpDir:
      return "tmp_dir";
  }
  return "shm_file";
}

Result<void> validate(const CleanOptions& options, const Context& context) {
  if (!options.shm && !options.tmp)
    return fail(Error::invalid("choose what to clean: --shm and/or --tmp"));
  if (options.all_users && context.syscalls->effective_uid() != 0) {
    return fail(Error::invalid("--all-users needs root"));
  }
  for (int pid : options.ignore_unreadable) {
    if (pid <= 0)
      return fail(Error::invalid(fmt::format("--ignore-unreadable: {} is not a pid", pid)));
  }
  if (options.older_than && options.older_than->count() < 0) {
    return fail(Error::invalid("--older-than must not be negative"));
  }
  return {};
}

Result<CleanPlan> plan_clean(const Context& context, const CleanOptions& options) {
  return Planner(context, options).run();
}

}  // namespace headroom
