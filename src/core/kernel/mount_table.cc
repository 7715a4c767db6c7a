#include "core/kernel/mount_table.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/vfs.h>

#include <string>

#include "core/open_files.h"

namespace headroom {

namespace {
constexpr std::size_t kMountinfoLimit = 4 << 20;  // as the cgroup probe reads it
}  // namespace

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
  if (const int error = read_from_start(fd_.get(), kMountinfoLimit, text); error != 0) {
    fd_ = UniqueFd();
    loaded_ = false;
    return fail(Error::from_errno(error, path.string()));
  }
  // A table read again without a change signal (not on procfs: a fixture tree) that has
  // the same text is the same table, of the same generation. On procfs POLLPRI says it
  // changed, and the text is not kept: a node's table can be thousands of mounts.
  if (!pollable_ && loaded_ && text == text_) return &mounts_;
  auto parsed = parse_mountinfo(text);
  if (!parsed) return fail(parsed.error());
  mounts_ = std::move(*parsed);
  if (!pollable_) text_ = std::move(text);
  loaded_ = true;
  ++generation_;
  return &mounts_;
}

}  // namespace headroom
