#include "core/clean/tree_use.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include "core/unique_fd.h"

namespace headroom {

std::optional<std::string> entry_in_use(const TreeEntry& entry, const InUseIndex& index,
                                        const Visibility& visibility, uid_t caller,
                                        std::vector<int>* blocking) {
  const walk::FileStat& stat = entry.stat;
  const FileId id{static_cast<std::uint64_t>(stat.id.dev), static_cast<std::uint64_t>(stat.id.ino)};
  if (const auto holders = holder_pids(index.holders(id)); !holders.empty()) {
    return describe_holders(index, holders);
  }
  switch (stat.mode & S_IFMT) {
    case S_IFREG: {
      const UniqueFd fd = open_for_probe(entry.dir_fd, entry.name.c_str(), id);
      const int open_errno = fd.ok() ? 0 : errno;
      if (open_errno == ESTALE) return "changed while being checked";
      const UseAnswer answer = regular_file_use(index, visibility, id, fd.get(), open_errno);
      if (answer.use == Use::kUnused) return std::nullopt;
      if (answer.use == Use::kUnknown && blocking != nullptr) {
        blocking->insert(blocking->end(), visibility.unreadable.begin(),
                         visibility.unreadable.end());
      }
      return answer.why;
    }
    case S_IFDIR:
    case S_IFIFO:
      return visibility.unseen_users(stat, caller, blocking);
    default:
      return std::nullopt;
  }
}

std::optional<std::string> first_use(int dir_fd, const std::string& name,
                                     const walk::FileStat& stat, const InUseIndex& index,
                                     const Visibility& visibility, uid_t caller) {
  const TreeEntry top{dir_fd, name, name, stat};
  if (auto reason = entry_in_use(top, index, visibility, caller)) return name + ": " + *reason;
  if (stat.kind != walk::FileKind::kDirectory) return std::nullopt;
  const UniqueFd dir(
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
  walk::FileStat opened;
  if (!dir.ok() || walk::stat_at(dir.get(), "", opened) != 0 || !(opened.id == stat.id)) {
    return name + ": changed while being checked";
  }
  bool found = false;
  const TreeSummary tree =
      summarize_tree(dir.get(), stat, [&](const TreeEntry& entry) -> std::optional<std::string> {
        if (found) return std::nullopt;
        auto reason = entry_in_use(entry, index, visibility, caller);
        found = reason.has_value();
        return reason;
      });
  if (tree.kept) return name + "/" + *tree.kept;
  if (tree.error) return name + ": could not read all of it: " + tree.error->message;
  return std::nullopt;
}

}  // namespace headroom
