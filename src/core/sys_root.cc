#include "core/sys_root.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <initializer_list>
#include <vector>

#include "core/open_files.h"

namespace headroom {

namespace {

/// `root` / each of `parts` (leading separators of a part dropped, an empty part skipped),
/// as path's operator/ joins them, built as one string: a path object splits its text into
/// components (a list on the heap) each time it is made or appended to, and a watch builds
/// a dozen of these a second.
std::filesystem::path join(const std::filesystem::path& root,
                           std::initializer_list<std::string_view> parts) {
  std::string joined = root.native();
  for (std::string_view part : parts) {
    while (!part.empty() && part.front() == '/') part.remove_prefix(1);
    if (part.empty()) continue;
    if (!joined.empty() && joined.back() != '/') joined += '/';
    joined += part;
  }
  return joined;
}

}  // namespace

SysRoot::SysRoot(std::filesystem::path root) : root_(std::move(root)) {
  if (root_.empty()) root_ = "/";
}

bool SysRoot::is_live() const { return root_ == "/"; }

std::filesystem::path SysRoot::proc(std::string_view relative) const {
  return join(root_, {"proc", relative});
}

std::filesystem::path SysRoot::sys(std::string_view relative) const {
  return join(root_, {"sys", relative});
}

std::filesystem::path SysRoot::dev(std::string_view relative) const {
  return join(root_, {"dev", relative});
}

std::filesystem::path SysRoot::host(const std::filesystem::path& absolute) const {
  return join(root_, {absolute.native()});
}

std::filesystem::path SysRoot::display(const std::filesystem::path& rooted) const {
  if (is_live()) return rooted;
  const std::string& text = rooted.native();
  const std::string& prefix = root_.native();
  if (text.compare(0, prefix.size(), prefix) == 0) {
    std::string rest = text.substr(prefix.size());
    if (rest.empty() || rest.front() != '/') rest.insert(rest.begin(), '/');
    return rest;
  }
  return rooted;
}

Result<std::string> SysRoot::read(const std::filesystem::path& path, std::size_t limit,
                                  FileEnd end) const {
  // A watch sample keeps its pseudo-files open between samples (open_files.h).
  if (OpenFiles* files = current_open_files()) return files->read(path, limit, end);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(Error::from_errno(errno, path.string()));
  std::string content;
  std::array<char, 8192> buffer{};
  while (content.size() < limit) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      return fail(Error::from_errno(saved, path.string()));
    }
    if (got == 0) break;
    content.append(buffer.data(), static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (content.size() > limit) content.resize(limit);
  return content;
}

Result<std::filesystem::path> SysRoot::resolve(const std::filesystem::path& absolute) const {
  // Components still to walk, last first, so a link's target is pushed in front of the rest.
  std::vector<std::string> pending;
  for (const auto& part : absolute.relative_path()) pending.push_back(part.string());
  std::reverse(pending.begin(), pending.end());
  std::filesystem::path done = "/";
  int links = 0;
  while (!pending.empty()) {
    const std::string part = std::move(pending.back());
    pending.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      done = done.parent_path();
      continue;
    }
    const std::filesystem::path next = done / part;
    struct stat info {};
    if (::lstat(host(next).c_str(), &info) != 0) {
      return fail(Error::from_errno(errno, next.string()));
    }
    if (!S_ISLNK(info.st_mode)) {
      done = next;
      continue;
    }
    if (++links > 40) return fail(Error::from_errno(ELOOP, absolute.string()));
    auto target = read_link(host(next));
    if (!target) return fail(target.error());
    const std::filesystem::path link(*target);
    if (link.is_absolute()) done = "/";
    std::vector<std::string> parts;
    for (const auto& component : link.relative_path()) parts.push_back(component.string());
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  }
  return done;
}

Result<std::string> SysRoot::read_link(const std::filesystem::path& path) const {
  std::array<char, 4096> buffer{};
  const ssize_t got = ::readlink(path.c_str(), buffer.data(), buffer.size());
  if (got < 0) return fail(Error::from_errno(errno, path.string()));
  return std::string(buffer.data(), static_cast<std::size_t>(got));
}

}  // namespace headroom
