#include "core/sys_root.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "core/open_files.h"

namespace headroom {

namespace {

std::filesystem::path join(const std::filesystem::path& root, std::string_view absolute) {
  while (!absolute.empty() && absolute.front() == '/') absolute.remove_prefix(1);
  if (absolute.empty()) return root;
  return root / std::filesystem::path(absolute);
}

}  // namespace

SysRoot::SysRoot(std::filesystem::path root) : root_(std::move(root)) {
  if (root_.empty()) root_ = "/";
}

bool SysRoot::is_live() const { return root_ == "/"; }

std::filesystem::path SysRoot::proc(std::string_view relative) const {
  return join(join(root_, "proc"), relative);
}

std::filesystem::path SysRoot::sys(std::string_view relative) const {
  return join(join(root_, "sys"), relative);
}

std::filesystem::path SysRoot::dev(std::string_view relative) const {
  return join(join(root_, "dev"), relative);
}

std::filesystem::path SysRoot::host(const std::filesystem::path& absolute) const {
  return join(root_, absolute.native());
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

Result<std::string> SysRoot::read(const std::filesystem::path& path, std::size_t limit) const {
  // A watch sample keeps its pseudo-files open between samples (open_files.h).
  if (OpenFiles* files = current_open_files()) return files->read(path, limit);
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

Result<std::string> SysRoot::read_link(const std::filesystem::path& path) const {
  std::array<char, 4096> buffer{};
  const ssize_t got = ::readlink(path.c_str(), buffer.data(), buffer.size());
  if (got < 0) return fail(Error::from_errno(errno, path.string()));
  return std::string(buffer.data(), static_cast<std::size_t>(got));
}

}  // namespace headroom
