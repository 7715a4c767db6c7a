#pragma once
// One statx(2) per entry, relative to a directory fd, never following a
// symlink and never triggering an automount. Only the fields du and prune use
// are requested, so filesystems that compute some lazily (NFS, FUSE) do less.

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace headroom::walk {

/// What an entry is, from its mode.
enum class FileKind { kDirectory, kFile, kSymlink, kOther };

/// Identity of a file: device and inode (what the in-use index and hard-link
/// detection key on).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

/// Hash for FileId sets.
struct FileIdHash {
  std::size_t operator()(const FileId& id) const noexcept {
    return std::hash<std::uint64_t>{}((static_cast<std::uint64_t>(id.dev) * 0x9E3779B97F4A7C15ULL) ^
                                      static_cast<std::uint64_t>(id.ino));
  }
};

/// The fields of one statx result that du and prune need.
struct FileStat {
  FileId id;
  FileKind kind = FileKind::kOther;
  uid_t owner = 0;
  gid_t group = 0;
  std::uint64_t links = 1;
  std::uint64_t disk_bytes = 0;      ///< stx_blocks * 512, what `du` reports
  std::uint64_t apparent_bytes = 0;  ///< stx_size
  std::int64_t mtime_ns = 0;         ///< modification time, ns since the epoch
  std::int64_t atime_ns = 0;         ///< last access
  std::int64_t ctime_ns = 0;         ///< last status change (tar -x sets mtime, not ctime)
  std::uint32_t mode = 0;            ///< st_mode: type and permission bits
  bool mount_root = false;           ///< STATX_ATTR_MOUNT_ROOT: a mount point (also bind mounts)
};

/// statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT). `name` may be ""
/// to stat dir_fd itself. Returns 0 or the errno.
[[nodiscard]] int stat_at(int dir_fd, const char* name, FileStat& out);

/// The walker's statx of each entry below the top level: only what a Tally and
/// the walk's own checks read (type, blocks, size, links, inode, mtime, the
/// mount-root attribute), with AT_STATX_DONT_SYNC so a network filesystem
/// answers from its attribute cache. owner, group, atime and ctime are left 0.
[[nodiscard]] int stat_entry_at(int dir_fd, const char* name, FileStat& out);

}  // namespace headroom::walk
