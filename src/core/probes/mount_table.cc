#include "core/probes/mount_table.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/vfs.h>

#include <string>

namespace headroom {

bool MountTable::changed() const {
  if (!loaded_ || !pollable_) return true;
  pollfd event{fd_.get(), POLLPRI, 0};
  return ::poll(&event, 1, 0) != 0;  // POLLPRI|POLLERR: changed; -1: read again to be safe
}

Result<const std::vector<MountEntry>*> MountTable::current(const Context& context) {
  if (!changed()) return &mounts_;
  const std::filesystem::path path = context.process_file("mountinfo");
  if (!fd_.ok()) {
    fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_.ok()) return fail(Error::from_errno(errno, path.string()));
    struct statfs info {};
    pollable_ = ::fstatfs(fd_.get(), &info) == 0 && info.f_type == PROC_SUPER_MAGIC;
  }
  // A seq_file is regenerated from offset 0; read it whole.
  std::string text;
  char buffer[16384];
  for (off_t offset = 0;;) {
    const ssize_t got = ::pread(fd_.get(), buffer, sizeof buffer, offset);
    if (got < 0) {
      if (errno == EINTR) continue;
      const Error error = Error::from_errno(errno, path.string());
      fd_ = UniqueFd();
      loaded_ = false;
      return fail(error);
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    offset += got;
  }
  auto parsed = parse_mountinfo(text);
  if (!parsed) return fail(parsed.error());
  mounts_ = std::move(*parsed);
  loaded_ = true;
  return &mounts_;
}

}  // namespace headroom
