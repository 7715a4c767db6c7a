// Parser of /proc/<pid>/maps lines (see proc_maps.h). Hand-written rather
// than a regex or sscanf: a busy host has hundreds of thousands of lines and
// this runs on the hot path of every `who` and `clean`.

#include "core/kernel/proc_maps.h"

#include <linux/types.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>

#include <array>
#include <cerrno>

namespace headroom {

namespace {

// Consumes hex digits from the front of `text`; false when there were none.
bool take_hex(std::string_view& text, std::uint64_t& value) {
  std::size_t used = 0;
  value = 0;
  while (used < text.size()) {
    const char c = text[used];
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A' + 10);
    } else {
      break;
    }
    value = value * 16 + digit;
    ++used;
  }
  text.remove_prefix(used);
  return used > 0;
}

bool take_decimal(std::string_view& text, std::uint64_t& value) {
  std::size_t used = 0;
  value = 0;
  while (used < text.size() && text[used] >= '0' && text[used] <= '9') {
    value = value * 10 + static_cast<std::uint64_t>(text[used] - '0');
    ++used;
  }
  text.remove_prefix(used);
  return used > 0;
}

bool take_char(std::string_view& text, char expected) {
  if (text.empty() || text.front() != expected) return false;
  text.remove_prefix(1);
  return true;
}

void skip_blanks(std::string_view& text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
}

// include/uapi/linux/fs.h of Linux 6.11 (Debian 12's headers are older).
struct ProcmapQuery {
  __u64 size;
  __u64 query_flags;
  __u64 query_addr;
  __u64 vma_start;
  __u64 vma_end;
  __u64 vma_flags;
  __u64 vma_page_size;
  __u64 vma_offset;
  __u64 inode;
  __u32 dev_major;
  __u32 dev_minor;
  __u32 vma_name_size;
  __u32 build_id_size;
  __u64 vma_name_addr;
  __u64 build_id_addr;
};
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr __u64 kSharedVma = 0x08;
constexpr __u64 kCoveringOrNextVma = 0x10;
constexpr __u64 kFileBackedVma = 0x20;

int procmap_query(int maps_fd, ProcmapQuery& query) {
  query.size = sizeof query;
  while (::ioctl(maps_fd, kProcmapQuery, &query) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

}  // namespace

std::uint64_t make_device(std::uint32_t major, std::uint32_t minor) {
  return static_cast<std::uint64_t>(makedev(major, minor));
}

int query_file_mapping(int maps_fd, std::uint64_t address, MapsLine& mapping) {
  ProcmapQuery query{};
  query.query_flags = kCoveringOrNextVma | kFileBackedVma;
  query.query_addr = address;
  if (const int error = procmap_query(maps_fd, query); error != 0) return error;
  mapping.start = query.vma_start;
  mapping.end = query.vma_end;
  mapping.offset = query.vma_offset;
  mapping.major = query.dev_major;
  mapping.minor = query.dev_minor;
  mapping.inode = query.inode;
  mapping.shared = (query.vma_flags & kSharedVma) != 0;
  mapping.path = {};
  return 0;
}

int query_mapping_name(int maps_fd, std::uint64_t start, std::string& name) {
  std::array<char, 4096> buffer{};
  ProcmapQuery query{};
  query.query_flags = kFileBackedVma;
  query.query_addr = start;
  query.vma_name_addr = reinterpret_cast<__u64>(buffer.data());
  query.vma_name_size = buffer.size();
  if (const int error = procmap_query(maps_fd, query); error != 0) return error;
  if (query.vma_start != start || query.vma_name_size == 0) return ENOENT;
  // vma_name_size counts the terminating NUL; maps escapes '\n' (seq_path(..., "\n")).
  name.clear();
  for (const char c : std::string_view(buffer.data(), query.vma_name_size - 1)) {
    if (c == '\n') {
      name += "\\012";
    } else {
      name += c;
    }
  }
  return 0;
}

std::optional<MapsLine> parse_maps_line(std::string_view line) {
  MapsLine parsed;
  std::uint64_t major = 0;
  std::uint64_t minor = 0;
  if (!take_hex(line, parsed.start) || !take_char(line, '-') || !take_hex(line, parsed.end) ||
      !take_char(line, ' ')) {
    return std::nullopt;
  }
  if (line.size() < 5 || line[4] != ' ') return std::nullopt;
  parsed.shared = line[3] == 's';
  line.remove_prefix(5);
  if (!take_hex(line, parsed.offset) || !take_char(line, ' ') || !take_hex(line, major) ||
      !take_char(line, ':') || !take_hex(line, minor) || !take_char(line, ' ') ||
      !take_decimal(line, parsed.inode)) {
    return std::nullopt;
  }
  if (major > 0xfffff || minor > 0xfffff || parsed.end < parsed.start) return std::nullopt;
  parsed.major = static_cast<std::uint32_t>(major);
  parsed.minor = static_cast<std::uint32_t>(minor);
  skip_blanks(line);
  parsed.path = line;
  return parsed;
}

}  // namespace headroom
