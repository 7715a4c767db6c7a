#pragma once
// Directory listing with the raw getdents64(2) syscall into a caller-owned
// buffer: no DIR* allocation per directory and one syscall per ~1000 entries.
// glibc's readdir() does the same underneath but mallocs a DIR per opendir.
// Record layout (man 2 getdents): u64 d_ino, s64 d_off, u16 d_reclen,
// u8 d_type, char d_name[] (NUL-terminated, padded to 8 bytes).

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace headroom::walk {

/// Size of one listing buffer: large enough for ~1000 short names per syscall.
inline constexpr std::size_t kDirentBufferSize = 64 * 1024;

namespace detail {
inline constexpr std::size_t kInodeOffset = 0;
inline constexpr std::size_t kReclenOffset = 16;
inline constexpr std::size_t kTypeOffset = 18;
inline constexpr std::size_t kNameOffset = 19;

inline bool dot_or_dot_dot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/// Fills `buffer` with one getdents64 batch and calls `batch(got)` for it
/// until the directory is exhausted. Returns 0 or the errno.
template <typename Batch>
int for_each_batch(int fd, char* buffer, std::size_t size, Batch&& batch) {
  for (;;) {
    const long got = ::syscall(SYS_getdents64, fd, buffer, size);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) return 0;
    batch(static_cast<std::size_t>(got));
  }
}

/// Calls `record(record_start)` for every record of one batch.
template <typename Record>
void for_each_record(const char* buffer, std::size_t got, Record&& record) {
  std::size_t offset = 0;
  while (offset < got) {
    const char* start = buffer + offset;
    std::uint16_t reclen = 0;
    std::memcpy(&reclen, start + kReclenOffset, sizeof reclen);
    offset += reclen;
    record(start);
  }
}
}  // namespace detail

/// Calls `visit(name, d_type)` for every entry of the open directory `fd`
/// except "." and ".."; `name` is NUL-terminated in the buffer and valid only
/// during the call. Returns 0, or the errno of the failing getdents64.
template <typename Visit>
int for_each_dirent(int fd, char* buffer, std::size_t size, Visit&& visit) {
  return detail::for_each_batch(fd, buffer, size, [&](std::size_t got) {
    detail::for_each_record(buffer, got, [&](const char* record) {
      const char* name = record + detail::kNameOffset;
      if (detail::dot_or_dot_dot(name)) return;
      visit(std::string_view(name), static_cast<unsigned char>(record[detail::kTypeOffset]));
    });
  });
}

/// One entry of a listing batch, for visiting it in inode order.
struct DirentRef {
  std::uint64_t inode;
  std::uint32_t offset;  ///< of the record in the listing buffer
};

/// Like for_each_dirent, but visits the entries of each getdents64 batch
/// (up to ~1000 names with the default buffer) in inode-number order, the
/// order of the inode table on disk. A statx of each entry in that order reads
/// the inode table forward instead of in the directory's hash order, which on
/// a cold cache lets the filesystem's inode readahead serve most of them (GNU
/// fts sorts the same way, for directories of 10,000 entries and more).
/// `order` is scratch space the caller reuses, so nothing is allocated per
/// entry once it has grown.
template <typename Visit>
int for_each_dirent_by_inode(int fd, char* buffer, std::size_t size, std::vector<DirentRef>& order,
                             Visit&& visit) {
  return detail::for_each_batch(fd, buffer, size, [&](std::size_t got) {
    order.clear();
    detail::for_each_record(buffer, got, [&](const char* record) {
      if (detail::dot_or_dot_dot(record + detail::kNameOffset)) return;
      std::uint64_t inode = 0;
      std::memcpy(&inode, record + detail::kInodeOffset, sizeof inode);
      order.push_back({inode, static_cast<std::uint32_t>(record - buffer)});
    });
    std::sort(order.begin(), order.end(),
              [](const DirentRef& a, const DirentRef& b) { return a.inode < b.inode; });
    for (const DirentRef& ref : order) {
      const char* record = buffer + ref.offset;
      visit(std::string_view(record + detail::kNameOffset),
            static_cast<unsigned char>(record[detail::kTypeOffset]));
    }
  });
}

}  // namespace headroom::walk
