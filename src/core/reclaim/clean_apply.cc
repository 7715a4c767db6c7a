// apply_clean: removes planned items, each only after re-checking it right
// before removal. The sequence for a file or directory entry:
//   1. open its parent with O_NOFOLLOW|O_DIRECTORY and check it is the planned inode;
//   2. fstatat(AT_SYMLINK_NOFOLLOW): same device+inode, owner, still old enough;
//   3. a regular file or directory: open it O_NOFOLLOW, flock(LOCK_EX|LOCK_NB) it;
//      a socket: not bound by anyone (/proc/net/unix);
//   4. rename it to an unguessable name in the same directory (renameat2
//      RENAME_NOREPLACE): from here nobody can open it by name;
//   5. re-scan who holds it (and, for a directory, everything below) and check
//      the renamed entry is still our inode; on any doubt rename it back;
//   6. unlinkat relative to the parent fd (a directory: deepest first, see tree_walk).
// Nothing here follows a symlink or leaves the planned filesystem.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <unordered_set>
#include <utility>

#include "core/inuse/sysvipc_shm.h"
#include "core/reclaim/audit_log.h"
#include "core/reclaim/clean.h"
#include "core/reclaim/clean_rules.h"
#include "core/reclaim/proc_net_unix.h"
#include "core/reclaim/shm_survey.h"
#include "core/reclaim/tree_walk.h"
#include "core/unique_fd.h"
#include "core/units.h"

namespace headroom {

namespace {

class Remover {
 public:
  Remover(const Context& context, const CleanOptions& options)
      : context_(context), options_(options), now_(context.syscalls->now()) {}

  CleanResult run(const CleanPlan& plan) {
    for (const CleanItem& item : plan.items) {
      const std::optional<std::string> skipped =
          item.kind == CleanKind::kSysvSegment ? remove_sysv(item) : remove_entry(item);
      if (skipped) {
        result_.skipped.push_back({item.path, *skipped, item.bytes});
        continue;
      }
      result_.removed.push_back(item);
      result_.freed_bytes += item.bytes;
      if (!options_.audit_log.empty()) {
        if (auto written = append_audit(options_.audit_log, item, now_); !written) {
          result_.audit_errors.push_back(written.error().message);
        }
      }
    }
    return std::move(result_);
  }

 private:
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

  std::optional<std::string> remove_entry(const CleanItem& item) {
    const auto parent = parent_fd(item);
    if (!parent) return "its directory was replaced or is gone since the plan";
    const int dir = *parent;
    struct stat info {};
    if (::fstatat(dir, item.name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
      return errno == ENOENT ? "already gone"
                             : fmt::format("stat failed: {}", std::strerror(errno));
    }
    if (file_id_of(info) != item.id) return "replaced by another file since the plan";
    if (info.st_uid != item.uid) return "its owner changed since the plan";
    if ((item.kind == CleanKind::kTmpDir) != S_ISDIR(info.st_mode)) return "its type changed";
    const auto modified = std::chrono::system_clock::from_time_t(info.st_mtim.tv_sec);
    if (now_ - modified < minimum(item)) return "modified since the plan";

    // Hold the entry open (never through a symlink) for the flock and the identity check.
    UniqueFd held;
    if (S_ISREG(info.st_mode) || S_ISDIR(info.st_mode)) {
      held = UniqueFd(::openat(dir, item.name.c_str(),
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
                                   (S_ISDIR(info.st_mode) ? O_DIRECTORY : 0)));
      struct stat opened {};
      if (held.get() < 0 || ::fstat(held.get(), &opened) != 0 || file_id_of(opened) != item.id) {
        return "changed while being checked";
      }
      if (::flock(held.get(), LOCK_EX | LOCK_NB) != 0) {
        return errno == EWOULDBLOCK ? "locked by a process (flock)"
                                    : fmt::format("flock failed: {}", std::strerror(errno));
      }
    } else if (S_ISSOCK(info.st_mode)) {
      const auto sockets = read_proc_net_unix(context_);
      if (!sockets) return "could not read the socket table: " + sockets.error().message;
      if (sockets->count(item.path.native()) > 0) return "a live socket (bound by a process)";
    }

    const std::string quarantine = quarantine_name(++counter_);
    if (::renameat2(dir, item.name.c_str(), dir, quarantine.c_str(), RENAME_NOREPLACE) != 0) {
      return fmt::format("could not rename for removal: {}", std::strerror(errno));
    }
    const auto put_back = [&](std::string reason) -> std::optional<std::string> {
      if (::renameat2(dir, quarantine.c_str(), dir, item.name.c_str(), RENAME_NOREPLACE) != 0) {
        reason += fmt::format(" (left as {})", quarantine);
      }
      return reason;
    };
    struct stat renamed {};
    if (::fstatat(dir, quarantine.c_str(), &renamed, AT_SYMLINK_NOFOLLOW) != 0 ||
        file_id_of(renamed) != item.id) {
      return put_back("changed during removal");
    }
    ScanOptions scan;
    scan.devices = {item.id.device};
    scan.include_sysv = false;
    auto index = scan_in_use(context_, scan);
    if (!index) return put_back("could not re-scan processes: " + index.error().message);
    if (const auto blocking = blocking_unreadable(*index, options_); !blocking.empty()) {
      return put_back(
          fmt::format("pid {} could not be inspected at the re-check", blocking.front()));
    }

    if (!S_ISDIR(info.st_mode)) {
      if (index->is_held(item.id)) {
        return put_back(held_reason(*index, holder_pids(index->holders(item.id))));
      }
      if (::unlinkat(dir, quarantine.c_str(), 0) != 0) {
        return put_back(fmt::format("unlink failed: {}", std::strerror(errno)));
      }
      return std::nullopt;
    }
    return remove_directory(item, dir, held.get(), quarantine, *index, put_back);
  }

  template <typename PutBack>
  std::optional<std::string> remove_directory(const CleanItem& item, int dir, int dir_fd,
                                              const std::string& quarantine,
                                              const InUseIndex& index, PutBack& put_back) {
    const TreeSummary tree = summarize_tree(dir_fd, item.id.device);
    if (tree.crosses_mount) return put_back("contains a mount point");
    if (!tree.error.empty()) return put_back("could not read all of it: " + tree.error);
    for (const FileId& below : tree.ids) {
      if (index.is_held(below))
        return put_back(held_reason(index, holder_pids(index.holders(below))));
    }
    if (now_ - std::chrono::system_clock::from_time_t(tree.newest_mtime) < minimum(item)) {
      return put_back("something inside was modified since the plan");
    }
    const std::chrono::seconds age = minimum(item);
    const auto now = now_;
    const RemoveOutcome outcome = remove_tree_contents(
        dir_fd, item.id.device, [&](const struct stat& entry) -> std::optional<std::string> {
          if (index.is_held(file_id_of(entry))) return "in use";
          if (now - std::chrono::system_clock::from_time_t(entry.st_mtim.tv_sec) < age) {
            return "modified while removing";
          }
          return std::nullopt;
        });
    if (::unlinkat(dir, quarantine.c_str(), AT_REMOVEDIR) != 0) {
      std::string reason = fmt::format("removed {} entries, kept the rest", outcome.removed);
      if (!outcome.kept.empty()) reason += ": " + outcome.kept.front();
      return put_back(reason);
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
  std::uint64_t counter_ = 0;
  CleanResult result_;
};

}  // namespace

CleanResult apply_clean(const Context& context, const CleanOptions& options,
                        const CleanPlan& plan) {
  return Remover(context, options).run(plan);
}

}  // namespace headroom
