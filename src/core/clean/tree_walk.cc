#include "core/clean/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace headroom {

namespace {

// Deeper trees are left alone: each level costs an fd.
constexpr int kMaxDepth = 128;

// Entry names of the directory open at dir_fd (read through a fresh open of ".", so dir_fd
// stays usable and its offset untouched).
bool list_names(int dir_fd, std::vector<std::string>& names) {
  const int copy = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return false;
  DIR* stream = ::fdopendir(copy);
  if (stream == nullptr) {
    ::close(copy);
    return false;
  }
  while (const dirent* entry = ::readdir(stream)) {
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    names.emplace_back(entry->d_name);
  }
  ::closedir(stream);
  std::sort(names.begin(), names.end());
  return true;
}

// Opens child directory `name` of dir_fd only if it is still the inode `seen`.
UniqueFd open_child_dir(int dir_fd, const std::string& name, const walk::FileStat& seen) {
  UniqueFd child(
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
  if (!child.ok()) return child;
  walk::FileStat opened;
  if (walk::stat_at(child.get(), "", opened) != 0 || !(opened.id == seen.id)) {
    errno = ESTALE;
    return UniqueFd();
  }
  return child;
}

bool is_mount_point(const walk::FileStat& entry, const walk::FileStat& root) {
  return entry.mount_root || entry.id.dev != root.id.dev;
}

// The walk shared by summarize and remove: `visit` gets each entry with the reason to keep
// it (nullopt: none) and says whether to descend into a directory.
class Walk {
 public:
  Walk(const walk::FileStat& root, const EntryRule& rule) : root_(root), rule_(rule) {}

  template <typename Visit, typename Leave>
  void run(int dir_fd, const std::string& prefix, int depth, Visit& visit, Leave& leave,
           std::optional<Error>& error) {
    std::vector<std::string> names;
    const std::string here = prefix.empty() ? "." : prefix;
    if (depth > kMaxDepth) {
      if (!error) error = Error{Error::Code::kUnsupported, here + ": deeper than 128 levels"};
      return;
    }
    if (!list_names(dir_fd, names)) {
      if (!error) error = Error::from_errno(errno, here);
      return;
    }
    for (const std::string& name : names) {
      const std::string relative = prefix.empty() ? name : fmt::format("{}/{}", prefix, name);
      walk::FileStat stat;
      if (walk::stat_at(dir_fd, name.c_str(), stat) != 0) continue;  // gone meanwhile
      const TreeEntry entry{dir_fd, name, relative, stat};
      std::optional<std::string> keep;
      if (is_mount_point(stat, root_)) {
        keep = "a mount point";
      } else {
        keep = rule_(entry);
      }
      if (!visit(entry, keep) || stat.kind != walk::FileKind::kDirectory) continue;
      const UniqueFd child = open_child_dir(dir_fd, name, stat);
      if (!child.ok()) {
        if (!error) {
          const int failed = errno;
          error =
              Error{Error::from_errno(failed, relative).code,
                    fmt::format("{}: changed while walking ({})", relative, std::strerror(failed))};
        }
        continue;
      }
      run(child.get(), relative, depth + 1, visit, leave, error);
      leave(entry);
    }
  }

 private:
  const walk::FileStat& root_;
  const EntryRule& rule_;
};

}  // namespace

std::int64_t last_activity_ns(const walk::FileStat& stat) {
  std::int64_t newest = std::max(stat.mtime_ns, stat.ctime_ns);
  if (stat.kind != walk::FileKind::kDirectory) newest = std::max(newest, stat.atime_ns);
  return newest;
}

TreeSummary summarize_tree(int dir_fd, const walk::FileStat& root, const EntryRule& rule) {
  TreeSummary summary;
  summary.newest_activity_ns = last_activity_ns(root);
  summary.allocated_bytes = root.disk_bytes;
  Walk walker(root, rule);
  auto visit = [&](const TreeEntry& entry, const std::optional<std::string>& keep) {
    ++summary.entries;
    summary.newest_activity_ns = std::max(summary.newest_activity_ns, last_activity_ns(entry.stat));
    if (keep && !summary.kept) summary.kept = entry.relative + ": " + *keep;
    if (is_mount_point(entry.stat, root)) return false;
    summary.allocated_bytes += entry.stat.disk_bytes;
    return true;
  };
  auto leave = [](const TreeEntry&) {};
  walker.run(dir_fd, "", 0, visit, leave, summary.error);
  return summary;
}

RemoveOutcome remove_tree_contents(int dir_fd, const walk::FileStat& root, const EntryRule& rule) {
  RemoveOutcome outcome;
  std::optional<Error> error;
  Walk walker(root, rule);
  auto visit = [&](const TreeEntry& entry, const std::optional<std::string>& keep) {
    if (keep) {
      outcome.kept.push_back(entry.relative + ": " + *keep);
      return false;
    }
    if (entry.stat.kind == walk::FileKind::kDirectory) return true;  // emptied, then removed
    // A symlink is removed as itself: unlinkat never follows.
    if (::unlinkat(entry.dir_fd, entry.name.c_str(), 0) == 0) {
      ++outcome.removed;
      if (entry.stat.links <= 1) outcome.freed_bytes += entry.stat.disk_bytes;
    } else if (errno != ENOENT) {
      outcome.kept.push_back(fmt::format("{}: {}", entry.relative, std::strerror(errno)));
    }
    return false;
  };
  auto leave = [&](const TreeEntry& entry) {
    if (::unlinkat(entry.dir_fd, entry.name.c_str(), AT_REMOVEDIR) == 0) {
      ++outcome.removed;
      outcome.freed_bytes += entry.stat.disk_bytes;
    }
  };
  walker.run(dir_fd, "", 0, visit, leave, error);
  if (error) outcome.kept.push_back(error->message);
  return outcome;
}

}  // namespace headroom
