// Parser of /proc/<pid>/maps lines (see proc_maps.h). Hand-written rather
// than a regex or sscanf: a busy host has hundreds of thousands of lines and
// this runs on the hot path of every `who` and `clean`.

#include "core/kernel/proc_maps.h"

#include <sys/sysmacros.h>

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

}  // namespace

std::uint64_t make_device(std::uint32_t major, std::uint32_t minor) {
  return static_cast<std::uint64_t>(makedev(major, minor));
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
