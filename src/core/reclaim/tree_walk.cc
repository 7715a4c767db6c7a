#include "core/reclaim/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace headroom {

namespace {

// Deeper trees are left alone: each level costs an fd.
constexpr int kMaxDepth = 128;

// Entry names of the directory open at dir_fd (read through a dup, so dir_fd stays usable).
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
  return true;
}

// Opens child directory `name` of dir_fd only if it is still the inode `seen`.
int open_child_dir(int dir_fd, const std::string& name, const struct stat& seen) {
  const int child =
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (child < 0) return -1;
  struct stat opened {};
  if (::fstat(child, &opened) != 0 || opened.st_dev != seen.st_dev ||
      opened.st_ino != seen.st_ino) {
    ::close(child);
    errno = ESTALE;
    return -1;
  }
  return child;
}

void summarize(int dir_fd, std::uint64_t device, int depth, TreeSummary& summary) {
  if (depth > kMaxDepth) {
    if (summary.error.empty()) summary.error = "tree deeper than 128 levels";
    return;
  }
  std::vector<std::string> names;
  if (!list_names(dir_fd, names)) {
    if (summary.error.empty()) summary.error = std::strerror(errno);
    return;
  }
  for (const std::string& name : names) {
    struct stat info {};
    if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    ++summary.entries;
    summary.ids.push_back(file_id_of(info));
    summary.newest_mtime = std::max(summary.newest_mtime, info.st_mtim.tv_sec);
    if (static_cast<std::uint64_t>(info.st_dev) != device) {
      summary.crosses_mount = true;
      continue;
    }
    summary.allocated_bytes += static_cast<std::uint64_t>(info.st_blocks) * 512;
    if (!S_ISDIR(info.st_mode)) continue;
    const int child = open_child_dir(dir_fd, name, info);
    if (child < 0) {
      if (summary.error.empty()) summary.error = name + ": " + std::strerror(errno);
      continue;
    }
    summarize(child, device, depth + 1, summary);
    ::close(child);
  }
}

void remove_below(int dir_fd, std::uint64_t device, const KeepRule& keep, int depth,
                  const std::string& prefix, RemoveOutcome& outcome) {
  std::vector<std::string> names;
  if (depth > kMaxDepth || !list_names(dir_fd, names)) {
    outcome.kept.push_back(prefix + ": could not be read");
    return;
  }
  for (const std::string& name : names) {
    const std::string shown = prefix.empty() ? name : fmt::format("{}/{}", prefix, name);
    struct stat info {};
    if (::fstatat(dir_fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (static_cast<std::uint64_t>(info.st_dev) != device) {
      outcome.kept.push_back(shown + ": a mount point (other filesystem)");
      continue;
    }
    if (auto reason = keep(info)) {
      outcome.kept.push_back(shown + ": " + *reason);
      continue;
    }
    if (S_ISDIR(info.st_mode)) {
      const int child = open_child_dir(dir_fd, name, info);
      if (child < 0) {
        outcome.kept.push_back(shown + ": changed while removing (" + std::strerror(errno) + ")");
        continue;
      }
      remove_below(child, device, keep, depth + 1, shown, outcome);
      ::close(child);
      if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0) {
        ++outcome.removed;
        outcome.freed_bytes += static_cast<std::uint64_t>(info.st_blocks) * 512;
      }
      continue;
    }
    // A symlink is removed as itself: unlinkat never follows.
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0) {
      ++outcome.removed;
      if (info.st_nlink <= 1)
        outcome.freed_bytes += static_cast<std::uint64_t>(info.st_blocks) * 512;
    }
  }
}

}  // namespace

TreeSummary summarize_tree(int dir_fd, std::uint64_t device) {
  TreeSummary summary;
  struct stat root {};
  if (::fstat(dir_fd, &root) == 0) {
    summary.ids.push_back(file_id_of(root));
    summary.newest_mtime = root.st_mtim.tv_sec;
    summary.allocated_bytes = static_cast<std::uint64_t>(root.st_blocks) * 512;
  }
  summarize(dir_fd, device, 0, summary);
  return summary;
}

RemoveOutcome remove_tree_contents(int dir_fd, std::uint64_t device, const KeepRule& keep) {
  RemoveOutcome outcome;
  remove_below(dir_fd, device, keep, 0, "", outcome);
  return outcome;
}

}  // namespace headroom
