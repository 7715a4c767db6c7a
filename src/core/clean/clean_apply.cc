// apply_clean: removes planned items, each only after re-checking it right
// before removal (docs/safety.md). First every planned entry (each directory of a planned
// tree) is watched with inotify for the grace period: anything opened, read, written or
// listed meanwhile is kept. Then, in batches of up to 256 items (one pair of /proc scans
// per batch, not per item), for each item:
//   1. open its parent with O_NOFOLLOW|O_DIRECTORY and check it is the planned inode;
//   2. statx(AT_SYMLINK_NOFOLLOW): same device+inode, owner and type, still unused for the
//      minimum age, no use seen since the grace period began;
//   3. the batch's fresh scan of /proc and of the socket tables, and the plan's rule again
//   (holders,
//      the kernel's lease answer, live sockets, processes that cannot be seen);
//   4. a regular file or directory is opened O_NOFOLLOW and flock(LOCK_EX|LOCK_NB)ed;
//   5. it is renamed to a random name in the same directory (renameat2 RENAME_NOREPLACE):
//      from here nobody can open it by name;
//   6. once the whole batch is renamed, /proc is scanned again and the renamed entry (for a
//   directory, every entry inside,
//      as it is removed) must still be unused; on any doubt it is renamed back;
//   7. unlinkat relative to the parent fd (a directory: deepest first, see tree_walk).
// Nothing here follows a symlink or leaves the planned filesystem. A stop request is
// honoured between batches only, so no entry is ever left under its quarantine name.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "core/clean/activity_watch.h"
#include "core/clean/audit_log.h"
#include "core/clean/clean.h"
#include "core/clean/clean_rules.h"
#include "core/clean/tree_walk.h"
#include "core/kernel/proc_net_unix.h"
#include "core/kernel/sysvipc_shm.h"
#include "core/unique_fd.h"
#include "core/units.h"
#include "core/walk/file_stat.h"

namespace headroom {

namespace {

UniqueFd open_dir_at(int dir_fd, const char* name, const walk::FileId& expected) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
  walk::FileStat opened;
  if (fd.ok() && (walk::stat_at(fd.get(), "", opened) != 0 || !(opened.id == expected))) {
    errno = ESTALE;
    return UniqueFd();
  }
  return fd;
}

bool same_file(const walk::FileStat& stat, FileId id) {
  return static_cast<std::uint64_t>(stat.id.dev) == id.device &&
         static_cast<std::uint64_t>(stat.id.ino) == id.inode;
}

class Remover {
 public:
  Remover(const Context& context, const CleanOptions& options)
      : context_(context), options_(options), now_(context.syscalls->now()) {}

  CleanResult run(const CleanPlan& plan, const std::function<bool()>& should_stop) {
    std::map<std::size_t, std::string> unwatched;
    if (options_.grace.count() > 0) unwatched = watch_all(plan);
    for (std::size_t first = 0; first < plan.items.size(); first += kBatch) {
      const std::size_t last = std::min(plan.items.size(), first + kBatch);
      if (should_stop && should_stop()) {
        result_.interrupted = true;
        for (std::size_t i = first; i < plan.items.size(); ++i) {
          result_.skipped.push_back(
              {plan.items[i].path, "not touched: interrupted", plan.items[i].bytes});
        }
        break;
      }
      run_batch(plan, first, last, unwatched);
    }
    return std::move(result_);
  }

 private:
  // Items are checked and removed in batches: one fresh scan of /proc before the renames
  // and one after, per batch, not per item (a host has thousands of processes).
  static constexpr std::size_t kBatch = 256;

  void run_batch(const CleanPlan& plan, std::size_t first, std::size_t last,
                 const std::map<std::size_t, std::string>& unwatched) {
    std::vector<std::optional<std::string>> outcome(last - first);
    std::vector<Staged> staged;
    Scan before;
    std::optional<std::string> scan_failed;
    bool scanned = false;
    for (std::size_t i = first; i < last; ++i) {
      const CleanItem& item = plan.items[i];
      std::optional<std::string>& skipped = outcome[i - first];
      if (const auto found = unwatched.find(i); found != unwatched.end()) {
        skipped = found->second;
      } else if (item.kind == CleanKind::kSysvSegment) {
        skipped = remove_sysv(item);
      } else {
        skipped = activity(i);
        watch_.forget(i);
        if (skipped) continue;
        if (!scanned) {
          scan_failed = rescan(plan, first, last, before);
          scanned = true;
        }
        if (scan_failed) {
          skipped = scan_failed;
          continue;
        }
        auto stage_result = stage(i, item, before);
        if (std::holds_alternative<std::string>(stage_result)) {
          skipped = std::get<std::string>(stage_result);
        } else {
          staged.push_back(std::move(std::get<Staged>(stage_result)));
        }
      }
    }
    if (!staged.empty()) {
      // Every staged entry now has a name nobody knows: a process that had it open or
      // mapped before the rename shows in this scan.
      Scan after;
      const auto failed = rescan(plan, first, last, after);
      for (Staged& entry : staged) {
        outcome[entry.index - first] =
            failed ? put_back(entry, *failed) : finish(plan.items[entry.index], entry, after);
      }
    }
    for (std::size_t i = first; i < last; ++i) record(plan.items[i], outcome[i - first]);
  }

  void record(const CleanItem& item, const std::optional<std::string>& skipped) {
    if (skipped) {
      result_.skipped.push_back({item.path, *skipped, item.bytes});
      return;
    }
    result_.removed.push_back(item);
    result_.freed_bytes += item.bytes;
    if (!options_.audit_log.empty()) {
      if (auto written = append_audit(options_.audit_log, item, now_); !written) {
        result_.audit_errors.push_back(written.error().message);
      }
    }
  }

  // Watches every planned entry, then waits the grace period. Returns the items that could
  // not be watched, with the reason: they are not removed.
  std::map<std::size_t, std::string> watch_all(const CleanPlan& plan) {
    std::map<std::size_t, std::string> unwatched;
    bool any = false;
    for (std::size_t i = 0; i < plan.items.size(); ++i) {
      const CleanItem& item = plan.items[i];
      if (item.kind == CleanKind::kSysvSegment) continue;
      const auto parent = parent_fd(item);
      if (!parent) continue;  // reported when the item's turn comes
      int error = 0;
      if (item.kind == CleanKind::kTmpDir) {
        error = watch_tree(*parent, item, i);
      } else {
        error = watch_.add(*parent, i, item.name);
      }
      if (error != 0) {
        unwatched[i] = fmt::format(
            "could not watch it for use ({}{}); --grace 0 removes without watching",
            std::strerror(error),
            error == ENOSPC ? ": too many directories for fs.inotify.max_user_watches" : "");
      } else {
        any = true;
      }
    }
    if (any) {
      watch_.reset();  // what our own walking caused
      std::this_thread::sleep_for(options_.grace);
    }
    return unwatched;
  }

  // A watch on the planned directory and on every directory below it.
  int watch_tree(int parent, const CleanItem& item, std::size_t index) {
    walk::FileStat stat;
    if (walk::stat_at(parent, item.name.c_str(), stat) != 0 || !same_file(stat, item.id)) return 0;
    const UniqueFd dir = open_dir_at(parent, item.name.c_str(), stat.id);
    if (!dir.ok()) return 0;  // the re-check reports it
    int error = watch_.add(dir.get(), index);
    if (error != 0) return error;
    (void)summarize_tree(
        dir.get(), stat, [&](const TreeEntry& entry) -> std::optional<std::string> {
          if (error != 0 || entry.stat.kind != walk::FileKind::kDirectory) return std::nullopt;
          const UniqueFd child = open_dir_at(entry.dir_fd, entry.name.c_str(), entry.stat.id);
          if (child.ok()) error = watch_.add(child.get(), index);
          return std::nullopt;
        });
    return error;
  }

  // Use seen since the grace period began.
  std::optional<std::string> activity(std::size_t index) {
    if (options_.grace.count() == 0) return std::nullopt;
    watch_.collect();
    if (watch_.active(index)) {
      return fmt::format("used while headroom watched it ({} grace period, or after)",
                         format_duration(std::chrono::duration_cast<std::chrono::seconds>(
                             std::max(options_.grace, std::chrono::milliseconds{1000}))));
    }
    if (watch_.overflowed()) {
      return "could not tell whether it was used meanwhile (the inotify queue overflowed); run "
             "again";
    }
    return std::nullopt;
  }

  // The parent directory, opened once and only if it is still the planned inode.
  std::optional<int> parent_fd(const CleanItem& item) {
    auto found = parents_.find(item.parent.native());
    if (found == parents_.end()) {
      const std::filesystem::path rooted = context_.root.host(item.parent);
      UniqueFd fd(::open(rooted.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat info {};
      if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || file_id_of(info) != item.parent_id) {
        return std::nullopt;
      }
      found = parents_.emplace(item.parent.native(), std::move(fd)).first;
    }
    return found->second.get();
  }

  [[nodiscard]] std::chrono::seconds minimum(const CleanItem& item) const {
    return minimum_age(options_, item.kind != CleanKind::kShmFile);
  }

  // A fresh scan of /proc (and, for the temp dir, of the socket tables) and the rule on it.
  struct Scan {
    InUseIndex index;
    std::optional<LiveSockets> sockets;
    std::map<bool, EntryJudge> judges;  // by "a temp dir item": the minimum age differs
  };
  std::optional<std::string> rescan(const CleanPlan& plan, std::size_t first, std::size_t last,
                                    Scan& scan) {
    ScanOptions options;
    options.include_sysv = false;
    bool tmp = false;
    for (std::size_t i = first; i < last; ++i) {
      const CleanItem& item = plan.items[i];
      if (item.kind == CleanKind::kSysvSegment) continue;
      options.devices.push_back(item.id.device);
      tmp = tmp || item.kind != CleanKind::kShmFile;
    }
    std::sort(options.devices.begin(), options.devices.end());
    options.devices.erase(std::unique(options.devices.begin(), options.devices.end()),
                          options.devices.end());
    auto index = scan_in_use(context_, options);
    if (!index) return "could not re-scan processes: " + index.error().message;
    scan.index = std::move(*index);
    if (tmp) {
      auto sockets = read_live_sockets(context_);
      if (sockets) scan.sockets = std::move(*sockets);
    }
    return std::nullopt;
  }
  EntryJudge& judge(Scan& scan, const CleanItem& item) {
    const bool tmp = item.kind != CleanKind::kShmFile;
    auto found = scan.judges.find(tmp);
    if (found == scan.judges.end()) {
      found = scan.judges
                  .try_emplace(tmp, context_, options_, scan.index,
                               scan.sockets ? &*scan.sockets : nullptr, minimum(item))
                  .first;
    }
    return found->second;
  }

  std::string shown(const CleanItem& item) const {
    return context_.root.display(context_.root.host(item.path)).string();
  }

  // An entry renamed out of the way, held open and locked, waiting for the second scan.
  struct Staged {
    std::size_t index = 0;
    const CleanItem* item = nullptr;
    int dir = -1;
    walk::FileStat stat;
    UniqueFd held;
    std::string quarantine;
  };

  // Steps 1-5: identity, the rule on the fresh scan, hold + flock, rename.
  std::variant<Staged, std::string> stage(std::size_t index, const CleanItem& item, Scan& scan) {
    const auto parent = parent_fd(item);
    if (!parent) return std::string("its directory was replaced or is gone since the plan");
    Staged staged;
    staged.index = index;
    staged.item = &item;
    staged.dir = *parent;
    walk::FileStat& stat = staged.stat;
    if (const int error = walk::stat_at(staged.dir, item.name.c_str(), stat); error != 0) {
      return error == ENOENT ? std::string("already gone")
                             : fmt::format("stat failed: {}", std::strerror(error));
    }
    if (!same_file(stat, item.id)) return std::string("replaced by another file since the plan");
    if (stat.owner != item.uid) return std::string("its owner changed since the plan");
    const bool is_dir = stat.kind == walk::FileKind::kDirectory;
    if ((item.kind == CleanKind::kTmpDir) != is_dir) return std::string("its type changed");

    // The plan's rule again, on a fresh scan, before anything is touched.
    const TreeEntry top{staged.dir, item.name, item.name, stat};
    if (auto reason = judge(scan, item).keep(top, shown(item))) return *reason;

    // Hold the entry open (never through a symlink) for the flock, the identity check and,
    // for a regular file, the lease: no second fd of ours may be open then.
    if (is_dir) {
      staged.held = open_dir_at(staged.dir, item.name.c_str(), stat.id);
    } else if (stat.kind == walk::FileKind::kFile) {
      staged.held = open_for_probe(staged.dir, item.name.c_str(), item.id);
      if (!staged.held.ok() && (errno == EWOULDBLOCK || errno == EAGAIN))
        return std::string("another process holds a lease on it");
    }
    if ((is_dir || stat.kind == walk::FileKind::kFile) && !staged.held.ok()) {
      return std::string("changed while being checked");
    }
    if (staged.held.ok() && ::flock(staged.held.get(), LOCK_EX | LOCK_NB) != 0) {
      return errno == EWOULDBLOCK ? std::string("locked by a process (flock)")
                                  : fmt::format("flock failed: {}", std::strerror(errno));
    }
    staged.quarantine = quarantine_name();
    if (::renameat2(staged.dir, item.name.c_str(), staged.dir, staged.quarantine.c_str(),
                    RENAME_NOREPLACE) != 0) {
      return fmt::format("could not rename for removal: {}", std::strerror(errno));
    }
    return staged;
  }

  std::optional<std::string> put_back(const Staged& staged, std::string reason) {
    const CleanItem& item = *staged.item;
    if (::renameat2(staged.dir, staged.quarantine.c_str(), staged.dir, item.name.c_str(),
                    RENAME_NOREPLACE) != 0) {
      reason += fmt::format(" (left as {})", staged.quarantine);
    }
    return reason;
  }

  // Steps 6-7: the renamed entry must still be unused on the second scan, then it goes.
  std::optional<std::string> finish(const CleanItem& item, Staged& staged, Scan& scan) {
    walk::FileStat renamed;
    if (walk::stat_at(staged.dir, staged.quarantine.c_str(), renamed) != 0 ||
        !same_file(renamed, item.id)) {
      return put_back(staged, "changed during removal");
    }
    const EntryJudge& rule = judge(scan, item);
    if (const auto pids = holder_pids(scan.index.holders(item.id)); !pids.empty()) {
      return put_back(staged, describe_holders(scan.index, pids));
    }
    if (staged.stat.kind == walk::FileKind::kDirectory) {
      return remove_directory(item, staged, rule);
    }
    if (staged.stat.kind == walk::FileKind::kFile) {
      const UseAnswer use =
          regular_file_use(scan.index, rule.visibility(), item.id, staged.held.get());
      if (use.use != Use::kUnused) return put_back(staged, use.why);
    } else if (auto reason =
                   // The rename changed ctime, so the age is not asked again.
               rule.keep(TreeEntry{staged.dir, staged.quarantine, item.name, renamed}, shown(item),
                         /*check_age=*/false)) {
      return put_back(staged, *reason);
    }
    if (::unlinkat(staged.dir, staged.quarantine.c_str(), 0) != 0) {
      return put_back(staged, fmt::format("unlink failed: {}", std::strerror(errno)));
    }
    return std::nullopt;
  }

  std::optional<std::string> remove_directory(const CleanItem& item, Staged& staged,
                                              const EntryJudge& rule) {
    const std::string renamed_path =
        context_.root.display(context_.root.host(item.parent / staged.quarantine)).string();
    if (const auto held = holder_pids(rule.index().holders_under(renamed_path)); !held.empty()) {
      return put_back(staged, describe_holders(rule.index(), held));
    }
    if (auto unseen = rule.unseen_users(staged.stat)) return put_back(staged, *unseen);
    const std::string base = shown(item);
    const RemoveOutcome outcome = remove_tree_contents(
        staged.held.get(), staged.stat,
        [&](const TreeEntry& entry) { return rule.keep(entry, base + "/" + entry.relative); });
    if (::unlinkat(staged.dir, staged.quarantine.c_str(), AT_REMOVEDIR) != 0) {
      std::string reason = fmt::format("removed {} entries, kept the rest", outcome.removed);
      if (!outcome.kept.empty()) reason += ": " + outcome.kept.front();
      return put_back(staged, reason);
    }
    return std::nullopt;
  }

  // SysV: re-read the table, and remove only the same segment, still unattached.
  std::optional<std::string> remove_sysv(const CleanItem& item) {
    if (!context_.root.is_live()) return "SysV segments are removed only on the live host";
    auto segments = read_sysvipc_shm(context_);
    if (!segments) return "could not re-read SysV segments: " + segments.error().message;
    for (const SysvSegment& segment : *segments) {
      if (segment.shmid != item.shmid) continue;
      if (segment.key != item.key || segment.uid != item.uid) return "replaced since the plan";
      if (segment.attachments != 0)
        return fmt::format("attached by {} processes now", segment.attachments);
      if (::shmctl(segment.shmid, IPC_RMID, nullptr) != 0) {
        return fmt::format("shmctl(IPC_RMID) failed: {}", std::strerror(errno));
      }
      return std::nullopt;
    }
    return "already gone";
  }

  const Context& context_;
  const CleanOptions& options_;
  std::chrono::system_clock::time_point now_;
  std::map<std::string, UniqueFd> parents_;
  ActivityWatch watch_;
  CleanResult result_;
};

}  // namespace

CleanResult apply_clean(const Context& context, const CleanOptions& options, const CleanPlan& plan,
                        const std::function<bool()>& should_stop) {
  return Remover(context, options).run(plan, should_stop);
}

}  // namespace headroom
