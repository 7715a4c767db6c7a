#pragma once
// Directory listing with the raw getdents64(2) syscall into a caller-owned
// buffer: no DIR* allocation per directory and one syscall per ~1000 entries.
// glibc's readdir() does the same underneath but mallocs a DIR per opendir.
// Record layout (man 2 getdents): u64 d_ino, s64 d_off, u16 d_reclen,
// u8 d_type, char d_name[] (NUL-terminated, padded to 8 bytes).

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace headroom::walk {

/// Size of one listing buffer: large enough for ~1000 short names per syscall.
inline constexpr std::size_t kDirentBufferSize = 64 * 1024;

/// Calls `visit(name, d_type)` for every entry of the open directory `fd`
/// except "." and ".."; `name` is NUL-terminated in the buffer and valid only
/// during the call. Returns 0, or the errno of the failing getdents64.
template <typename Visit>
int for_each_dirent(int fd, char* buffer, std::size_t size, Visit&& visit) {
  constexpr std::size_t kReclenOffset = 16;
  constexpr std::size_t kTypeOffset = 18;
  constexpr std::size_t kNameOffset = 19;
  for (;;) {
    const long got = ::syscall(SYS_getdents64, fd, buffer, size);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) return 0;
    std::size_t offset = 0;
    while (offset < static_cast<std::size_t>(got)) {
      char* record = buffer + offset;
      std::uint16_t reclen = 0;
      std::memcpy(&reclen, record + kReclenOffset, sizeof reclen);
      const auto type = static_cast<unsigned char>(record[kTypeOffset]);
      const char* name = record + kNameOffset;
      offset += reclen;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      visit(std::string_view(name), type);
    }
  }
}

}  // namespace headroom::walk
