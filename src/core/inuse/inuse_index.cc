// Queries of the in-use index (the scan itself is in inuse_scan.cc).

#include "core/inuse/inuse_index.h"

#include <sys/stat.h>

#include <cerrno>

namespace headroom {

namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

}  // namespace

bool path_at_or_under(std::string_view path, std::string_view prefix) {
  while (prefix.size() > 1 && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix == "/") return !path.empty() && path.front() == '/';
  if (path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::string_view to_string(HoldKind kind) {
  switch (kind) {
    case HoldKind::kFd:
      return "fd";
    case HoldKind::kMap:
      return "mmap";
    case HoldKind::kCwd:
      return "cwd";
    case HoldKind::kRoot:
      return "root";
    case HoldKind::kExe:
      return "exe";
  }
  return "fd";
}

std::string_view Holder::original_path() const {
  std::string_view view = path;
  if (deleted && view.size() >= kDeletedSuffix.size() &&
      view.substr(view.size() - kDeletedSuffix.size()) == kDeletedSuffix) {
    view.remove_suffix(kDeletedSuffix.size());
  }
  return view;
}

std::vector<const Holder*> InUseIndex::holders(FileId file) const {
  std::vector<const Holder*> found;
  const auto [first, last] = by_inode_.equal_range(file.inode);
  for (auto it = first; it != last; ++it) {
    const Holder& holder = holders_[it->second];
    if (holder.file.device == file.device) found.push_back(&holder);
  }
  return found;
}

bool InUseIndex::is_held(FileId file) const {
  const auto [first, last] = by_inode_.equal_range(file.inode);
  for (auto it = first; it != last; ++it) {
    if (holders_[it->second].file.device == file.device) return true;
  }
  return false;
}

std::vector<const Holder*> InUseIndex::holders_under(const std::filesystem::path& path,
                                                     std::optional<FileId> path_id) const {
  std::vector<const Holder*> found;
  for (const Holder& holder : holders_) {
    if ((path_id && holder.file == *path_id) ||
        path_at_or_under(holder.original_path(), path.native())) {
      found.push_back(&holder);
    }
  }
  return found;
}

std::vector<const Holder*> InUseIndex::holders_on_device(std::uint64_t device) const {
  std::vector<const Holder*> found;
  for (const Holder& holder : holders_) {
    if (holder.file.device == device) found.push_back(&holder);
  }
  return found;
}

const ProcessInfo* InUseIndex::process(int pid) const {
  const auto found = processes_.find(pid);
  return found != processes_.end() ? &found->second : nullptr;
}

Result<FileId> file_id(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return fail(Error::from_errno(errno, path.string()));
  return file_id_of(info);
}

}  // namespace headroom
