#include "core/walk/file_stat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>

namespace headroom::walk {

namespace {

int stat_with(int dir_fd, const char* name, int flags, unsigned mask, FileStat& out) {
  flags |= AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT;
  if (name[0] == '\0') flags |= AT_EMPTY_PATH;
  struct statx raw {};
  if (::statx(dir_fd, name, flags, mask, &raw) != 0) return errno;
  out.id = FileId{makedev(raw.stx_dev_major, raw.stx_dev_minor), raw.stx_ino};
  switch (raw.stx_mode & S_IFMT) {
    case S_IFDIR:
      out.kind = FileKind::kDirectory;
      break;
    case S_IFREG:
      out.kind = FileKind::kFile;
      break;
    case S_IFLNK:
      out.kind = FileKind::kSymlink;
      break;
    default:
      out.kind = FileKind::kOther;
      break;
  }
  const bool owners = (mask & STATX_UID) != 0;
  out.owner = owners ? raw.stx_uid : 0;
  out.group = owners ? raw.stx_gid : 0;
  out.links = raw.stx_nlink;
  out.disk_bytes = raw.stx_blocks * 512;
  out.apparent_bytes = raw.stx_size;
  const auto ns = [](const statx_timestamp& time) {
    return static_cast<std::int64_t>(time.tv_sec) * 1'000'000'000 + time.tv_nsec;
  };
  out.mtime_ns = ns(raw.stx_mtime);
  const bool times = (mask & STATX_ATIME) != 0;
  out.atime_ns = times ? ns(raw.stx_atime) : 0;
  out.ctime_ns = times ? ns(raw.stx_ctime) : 0;
  out.mode = raw.stx_mode;
  // Linux 5.8 added the attribute; older kernels leave the mask bit clear and
  // the walker falls back to comparing st_dev only.
  out.mount_root = (raw.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
                   (raw.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  return 0;
}

}  // namespace

int stat_at(int dir_fd, const char* name, FileStat& out) {
  constexpr unsigned kMask = STATX_TYPE | STATX_MODE | STATX_BLOCKS | STATX_SIZE | STATX_MTIME |
                             STATX_ATIME | STATX_CTIME | STATX_UID | STATX_GID | STATX_NLINK |
                             STATX_INO;
  return stat_with(dir_fd, name, 0, kMask, out);
}

int stat_entry_at(int dir_fd, const char* name, FileStat& out) {
  constexpr unsigned kMask =
      STATX_TYPE | STATX_MODE | STATX_BLOCKS | STATX_SIZE | STATX_MTIME | STATX_NLINK | STATX_INO;
  return stat_with(dir_fd, name, AT_STATX_DONT_SYNC, kMask, out);
}

}  // namespace headroom::walk
