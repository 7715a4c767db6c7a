#include "core/prune/removal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <optional>

#include "core/clean/tree_use.h"
#include "core/inuse/use_proof.h"
#include "core/walk/dirents.h"

namespace headroom {

namespace {

constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

tl::unexpected<Error> failure(int errnum, const std::string& what) {
  return fail(Error::from_errno(errnum, what));
}

/// Removes the contents of the open directory `fd` (its path is `path`, for messages).
Result<void> empty_directory(int fd, const std::string& path, dev_t device) {
  std::vector<std::string> names;  // removing while listing could skip entries
  auto buffer = std::make_unique<char[]>(walk::kDirentBufferSize);
  const int error = walk::for_each_dirent(
      fd, buffer.get(), walk::kDirentBufferSize,
      [&](std::string_view name, unsigned char) { names.emplace_back(name); });
  if (error != 0) return failure(error, path);
  for (const std::string& name : names) {
    walk::FileStat stat;
    if (const int stat_error = walk::stat_at(fd, name.c_str(), stat); stat_error != 0) {
      if (stat_error == ENOENT) continue;
      return failure(stat_error, fmt::format("{}/{}", path, name));
    }
    if (stat.kind == walk::FileKind::kDirectory) {
      if (auto removed = remove_tree_at(fd, name, stat.id, device); !removed) return removed;
    } else if (::unlinkat(fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return failure(errno, fmt::format("{}/{}", path, name));
    }
  }
  return {};
}

/// The holder, size and identity checks done right before removing one checkpoint.
std::string recheck(const Context& context, const CheckpointScan& scan,
                    const Checkpoint& checkpoint, int dir_fd, HolderRecheck holders,
                    const std::vector<int>& vouched) {
  walk::FileStat now;
  if (const int error = walk::stat_at(dir_fd, checkpoint.name.c_str(), now); error != 0) {
    return fmt::format("cannot stat it any more: {}", std::strerror(error));
  }
  if (now.id != checkpoint.stat.id || now.kind != checkpoint.stat.kind) {
    return "replaced since the plan (different device/inode or type)";
  }
  // One scan of /proc and one walk give the size, the holders and the proof below.
  std::optional<InUseIndex> index;
  if (holders == HolderRecheck::kScan) {
    auto scanned = scan_device(context, scan.dir_stat);
    if (!scanned) return "cannot re-check who holds it: " + scanned.error().message;
    index = std::move(*scanned);
  }
  auto current = remeasure(scan.dir, checkpoint, index ? &*index : nullptr);
  if (!current) return "cannot measure it any more: " + current.error().message;
  if (current->tally.apparent_bytes != checkpoint.tally.apparent_bytes ||
      current->tally.newest_mtime_ns != checkpoint.tally.newest_mtime_ns) {
    return "changed since the plan (size or mtime): maybe still being written";
  }
  if (!index) return "";
  if (!current->holders.empty()) {
    const CheckpointHolder& first = current->holders.front();
    return fmt::format("now in use by {}[{}] ({})", first.command, first.pid, first.how);
  }
  // What the scan cannot see (another user's evaluation job reading it, a process outside
  // this pid namespace): the same proof as `clean` (docs/safety.md), file by file.
  const Visibility visibility = visibility_of(context, *index, vouched);
  if (auto use = first_use(dir_fd, checkpoint.name, now, *index, visibility,
                           context.syscalls->effective_uid())) {
    return "may be in use: " + *use;
  }
  return "";
}

}  // namespace

Result<void> remove_tree_at(int parent_fd, const std::string& name, const walk::FileId& expected,
                            dev_t device) {
  const int fd = ::openat(parent_fd, name.c_str(), kDirectoryFlags);
  if (fd < 0) return failure(errno, name);
  walk::FileStat stat;
  int error = walk::stat_at(fd, "", stat);
  Result<void> emptied;
  if (error != 0) {
    emptied = failure(error, name);
  } else if (stat.id.dev != device || stat.mount_root) {
    emptied = fail(Error::invalid(name + ": a mount point of another filesystem: not crossed"));
  } else if (stat.id != expected) {
    emptied = fail(Error::invalid(name + ": replaced while being removed"));
  } else {
    emptied = empty_directory(fd, name, device);
  }
  ::close(fd);
  if (!emptied) return emptied;
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0) return failure(errno, name);
  return {};
}

Result<std::vector<RemovalOutcome>> remove_checkpoints(const Context& context,
                                                       const CheckpointScan& scan,
                                                       const std::vector<std::size_t>& indices,
                                                       HolderRecheck holders,
                                                       const std::vector<int>& vouched) {
  const int dir_fd = ::open(scan.dir.c_str(), kDirectoryFlags);
  if (dir_fd < 0) return failure(errno, scan.dir.string());
  walk::FileStat dir_now;
  if (walk::stat_at(dir_fd, "", dir_now) != 0 || dir_now.id != scan.dir_stat.id) {
    ::close(dir_fd);
    return fail(Error::invalid(scan.dir.string() + ": replaced since the plan; nothing removed"));
  }
  std::vector<RemovalOutcome> outcomes;
  for (std::size_t index : indices) {
    const Checkpoint& checkpoint = scan.checkpoints[index];
    RemovalOutcome outcome{index, RemovalStatus::kSkipped,
                           recheck(context, scan, checkpoint, dir_fd, holders, vouched), 0};
    if (outcome.reason.empty()) {
      Result<void> removed;
      if (checkpoint.directory) {
        removed = remove_tree_at(dir_fd, checkpoint.name, checkpoint.stat.id, scan.dir_stat.id.dev);
      } else if (::unlinkat(dir_fd, checkpoint.name.c_str(), 0) != 0) {
        removed = failure(errno, checkpoint.name);
      }
      if (removed) {
        outcome.status = RemovalStatus::kRemoved;
        outcome.freed_bytes = checkpoint.tally.disk_bytes;
      } else {
        outcome.status = RemovalStatus::kFailed;
        outcome.reason = removed.error().message;
      }
    }
    outcomes.push_back(std::move(outcome));
  }
  ::close(dir_fd);
  return outcomes;
}

}  // namespace headroom
