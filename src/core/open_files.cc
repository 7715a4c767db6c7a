#include "core/open_files.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>

namespace headroom {

namespace {

thread_local OpenFiles* t_open_files = nullptr;

/// Whether the kernel regenerates the file on each read from offset 0.
bool pseudo_file(int fd) {
  struct statfs info {};
  if (::fstatfs(fd, &info) != 0) return false;
  switch (info.f_type) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

}  // namespace

int read_from_start(int fd, std::size_t limit, std::string& content, std::size_t expected,
                    FileEnd end) {
  // Not zeroed: pread fills what it returns (zeroing 8 KiB per read was 2.5% of a watch).
  std::array<char, 8192> buffer;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  // Asking for no more than the file is expected to hold: a sysctl (/proc/sys) read
  // allocates and zeroes a kernel buffer of the size asked, twice per read of the file.
  std::size_t ask = expected == 0 ? buffer.size() : std::min(buffer.size(), expected);
  off_t offset = 0;
  while (content.size() < limit) {
    const ssize_t got = ::pread(fd, buffer.data(), ask, offset);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) break;
    content.append(buffer.data(), static_cast<std::size_t>(got));
    offset += got;
    if (static_cast<std::size_t>(got) < ask && end == FileEnd::kShortRead) break;
    if (static_cast<std::size_t>(got) == ask) ask = buffer.size();  // more than expected
  }
  if (content.size() > limit) content.resize(limit);
  return 0;
}

Result<std::string> OpenFiles::read(const std::filesystem::path& path, std::size_t limit,
                                    FileEnd end) {
  std::string content;
  if (const auto kept = files_.find(path.native()); kept != files_.end()) {
    // Room for the size seen last time and a little more (a counter gains digits).
    KeptFile& file = kept->second;
    if (read_from_start(file.fd.get(), limit, content, file.last_size + 64, end) == 0) {
      file.last_size = content.size();
      return content;
    }
    // The file went away behind the fd (a removed cgroup, an exited pid): open it anew.
    files_.erase(kept);
    content.clear();
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.ok()) return fail(Error::from_errno(errno, path.string()));
  if (const int error = read_from_start(fd.get(), limit, content, 0, end); error != 0) {
    return fail(Error::from_errno(error, path.string()));
  }
  if (pseudo_file(fd.get())) files_.emplace(path.native(), KeptFile{std::move(fd), content.size()});
  return content;
}

ScopedOpenFiles::ScopedOpenFiles(OpenFiles* files) : previous_(t_open_files) {
  t_open_files = files;
}

ScopedOpenFiles::~ScopedOpenFiles() { t_open_files = previous_; }

OpenFiles* current_open_files() { return t_open_files; }

}  // namespace headroom
