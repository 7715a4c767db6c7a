// plan_clean: what `headroom clean` would remove, and why each item is safe.
// It removes nothing; apply_clean re-checks every item before touching it.

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/clean/clean.h"
#include "core/clean/clean_rules.h"
#include "core/clean/shm_survey.h"
#include "core/clean/tree_walk.h"
#include "core/inuse/user_names.h"
#include "core/kernel/proc_net_unix.h"
#include "core/unique_fd.h"
#include "core/units.h"
#include "core/walk/file_stat.h"

namespace headroom {

namespace {

std::chrono::seconds age_of(std::chrono::system_clock::time_point now, std::time_t modified) {
  const auto then = std::chrono::system_clock::from_time_t(modified);
  return now > then ? std::chrono::duration_cast<std::chrono::seconds>(now - then)
                    : std::chrono::seconds{0};
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
    if (options_.tmp) {
      if (auto result = plan_tmp(); !result) return fail(result.error());
    }
    for (const CleanItem& item : plan_.items) plan_.total_bytes += item.bytes;
    std::sort(plan_.blocking_pids.begin(), plan_.blocking_pids.end());
    plan_.blocking_pids.erase(std::unique(plan_.blocking_pids.begin(), plan_.blocking_pids.end()),
                              plan_.blocking_pids.end());
    return std::move(plan_);
  }

 private:
  bool owner_ok(uid_t uid) const { return cleans_owner(options_, euid_, uid); }

  void keep(const std::filesystem::path& path, std::string reason, std::uint64_t bytes = 0) {
    plan_.kept.push_back({path, std::move(reason), bytes});
  }

  void note_scan(const InUseIndex& index, const Visibility& visibility,
                 const std::vector<int>& blocking, bool kept_unproven) {
    plan_.processes_scanned = std::max(plan_.processes_scanned, index.processes_scanned());
    for (int pid : index.unreadable_pids()) plan_.unreadable_pids.push_back(pid);
    std::sort(plan_.unreadable_pids.begin(), plan_.unreadable_pids.end());
    plan_.unreadable_pids.erase(
        std::unique(plan_.unreadable_pids.begin(), plan_.unreadable_pids.end()),
        plan_.unreadable_pids.end());
    plan_.blocking_pids.insert(plan_.blocking_pids.end(), blocking.begin(), blocking.end());
    if (kept_unproven && plan_.visibility_note.empty())
      plan_.visibility_note = visibility.describe();
  }

  Result<void> plan_shm() {
    auto survey = survey_shm(context_, options_.ignore_unreadable);
    if (!survey) return fail(survey.error());
    const std::chrono::seconds minimum = minimum_age(options_, false);
    const std::filesystem::path dir = "/dev/shm";
    bool unproven = false;
    for (const ShmEntry& entry : survey->entries) {
      const std::filesystem::path path = dir / entry.name;
      const auto age = age_of(now_, std::chrono::system_clock::to_time_t(entry.modified));
      if (!entry.regular()) {
        keep(path, "not a regular file");
      } else if (entry.pattern == "other") {
        keep(path, "not a known segment name (torch_*, nccl-*, sem.*, psm_*, __KMP_*)",
             entry.allocated_bytes);
      } else if (auto refused = owner_refusal(options_, euid_, entry.uid, names_)) {
        keep(path, *refused, entry.allocated_bytes);
      } else if (entry.use != Use::kUnused) {
        unproven = unproven || entry.use == Use::kUnknown;
        keep(path, entry.use_why, entry.allocated_bytes);
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
        item.why_safe =
            entry.pattern == "torch"
                ? entry.use_why + "; the pid in a torch_ name is its creator, not a holder"
                : entry.use_why;
        plan_.items.push_back(std::move(item));
      }
    }
    note_scan(survey->index, survey->visibility,
              unproven ? survey->visibility.unreadable : std::vector<int>{}, unproven);
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
    } else if (auto refused = owner_refusal(options_, euid_, segment.uid, names_)) {
      keep(label, *refused, segment.size_bytes);
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
    const UniqueFd dir(::open(rooted.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.ok()) return fail(Error::from_errno(errno, options_.tmp_dir.string()));
    if (auto allowed =
            check_tmp_dir(context_, options_.tmp_dir, dir.get(), options_.tmp_dir_explicit);
        !allowed) {
      return fail(allowed.error());
    }
    walk::FileStat dir_stat;
    if (const int error = walk::stat_at(dir.get(), "", dir_stat); error != 0) {
      return fail(Error::from_errno(error, options_.tmp_dir.string()));
    }
    ScanOptions scan;
    scan.devices = {static_cast<std::uint64_t>(dir_stat.id.dev)};
    scan.include_sysv = false;
    auto index = scan_in_use(context_, scan);
    if (!index) return fail(index.error());
    auto sockets = read_live_sockets(context_);
    const EntryJudge judge(context_, options_, *index, sockets ? &*sockets : nullptr,
                           minimum_age(options_, true));
    std::vector<std::string> names;
    if (DIR* stream = ::fdopendir(::dup(dir.get()))) {
      while (const dirent* entry = ::readdir(stream)) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
      }
      ::closedir(stream);
    }
    std::sort(names.begin(), names.end());
    const FileId dir_id{static_cast<std::uint64_t>(dir_stat.id.dev),
                        static_cast<std::uint64_t>(dir_stat.id.ino)};
    for (const std::string& name : names) plan_tmp_entry(dir.get(), dir_id, name, judge);
    note_scan(*index, judge.visibility(), judge.blocking(), !judge.blocking().empty());
    return {};
  }

  void plan_tmp_entry(int dir_fd, FileId dir_id, const std::string& name, const EntryJudge& judge) {
    const std::filesystem::path path = options_.tmp_dir / name;
    walk::FileStat stat;
    if (walk::stat_at(dir_fd, name.c_str(), stat) != 0) return;  // gone meanwhile
    if (protected_tmp_name(name))
      return keep(path, "protected name (system sockets or PrivateTmp)");
    if (stat.mount_root || static_cast<std::uint64_t>(stat.id.dev) != dir_id.device) {
      return keep(path, "a mount point");
    }
    if (!owner_ok(stat.owner)) return;  // other users' files are not ours to list
    CleanItem item;
    item.path = path;
    item.parent = options_.tmp_dir;
    item.parent_id = dir_id;
    item.name = name;
    item.id = {static_cast<std::uint64_t>(stat.id.dev), static_cast<std::uint64_t>(stat.id.ino)};
    item.uid = stat.owner;
    item.owner = names_.name(stat.owner);
    item.bytes = stat.disk_bytes;
    item.kind = stat.kind == walk::FileKind::kDirectory ? CleanKind::kTmpDir : CleanKind::kTmpFile;
    const std::string shown = context_.root.display(context_.root.host(path)).string();
    const TreeEntry top{dir_fd, name, name, stat};
    if (auto reason = judge.keep(top, shown)) return keep(path, *reason, item.bytes);
    std::int64_t newest = last_activity_ns(stat);
    if (item.kind == CleanKind::kTmpDir) {
      if (const auto held = holder_pids(judge.index().holders_under(shown)); !held.empty()) {
        return keep(path, describe_holders(judge.index(), held), item.bytes);
      }
      const UniqueFd child(
          ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      walk::FileStat opened;
      if (!child.ok() || walk::stat_at(child.get(), "", opened) != 0 || !(opened.id == stat.id)) {
        return keep(path, fmt::format("could not open: {}", std::strerror(errno)));
      }
      bool found = false;
      const TreeSummary tree = summarize_tree(
          child.get(), stat, [&](const TreeEntry& entry) -> std::optional<std::string> {
            if (found) return std::nullopt;  // one reason is enough; the walk only counts now
            auto reason = judge.keep(entry, shown + "/" + entry.relative);
            found = reason.has_value();
            return reason;
          });
      item.bytes = tree.allocated_bytes;
      item.files = tree.entries;
      if (tree.kept) return keep(path, *tree.kept, item.bytes);
      if (tree.error)
        return keep(path, "could not read all of it: " + tree.error->message, item.bytes);
      newest = tree.newest_activity_ns;
    }
    const auto last_use = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(newest)));
    item.age = now_ > last_use ? std::chrono::duration_cast<std::chrono::seconds>(now_ - last_use)
                               : std::chrono::seconds{0};
    item.why_safe = fmt::format("no process uses {}; unused for {}",
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

bool cleans_owner(const CleanOptions& options, uid_t caller, uid_t owner) {
  if (options.all_users) return true;
  return owner == options.user.value_or(caller);
}

std::optional<std::string> owner_refusal(const CleanOptions& options, uid_t caller, uid_t owner,
                                         UserNames& names) {
  if (cleans_owner(options, caller, owner)) return std::nullopt;
  if (options.user) {
    return fmt::format("owned by {}, not {} (--user)", names.name(owner),
                       names.name(*options.user));
  }
  return fmt::format("owned by {} (use --all-users as root)", names.name(owner));
}

Result<void> validate(const CleanOptions& options, const Context& context) {
  if (!options.shm && !options.tmp)
    return fail(Error::invalid("choose what to clean: --shm and/or --tmp"));
  if (options.all_users && context.syscalls->effective_uid() != 0) {
    return fail(Error::invalid("--all-users needs root"));
  }
  if (options.user) {
    if (options.all_users) return fail(Error::invalid("--user and --all-users exclude each other"));
    const uid_t caller = context.syscalls->effective_uid();
    if (caller != 0 && *options.user != caller) return fail(Error::invalid("--user needs root"));
  }
  if (options.grace.count() < 0) return fail(Error::invalid("--grace must not be negative"));
  for (int pid : options.ignore_unreadable) {
    if (pid <= 0)
      return fail(Error::invalid(fmt::format("--ignore-unreadable: {} is not a pid", pid)));
  }
  if (options.tmp) {
    if (auto path = check_tmp_path(options.tmp_dir); !path) return path;
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
