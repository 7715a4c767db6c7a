// Parser and reader of /proc/sysvipc/shm (see sysvipc_shm.h).

#include "core/kernel/sysvipc_shm.h"

#include <fmt/format.h>

#include <charconv>

namespace headroom {

namespace {

// Splits on runs of blanks.
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    const std::size_t start = at;
    while (at < line.size() && line[at] != ' ' && line[at] != '\t') ++at;
    if (at > start) out.push_back(line.substr(start, at - start));
  }
  return out;
}

template <typename T>
bool number(std::string_view text, T& value, int base = 10) {
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return result.ec == std::errc() && result.ptr == text.data() + text.size();
}

}  // namespace

Result<std::vector<SysvSegment>> parse_sysvipc_shm(std::string_view text) {
  std::vector<SysvSegment> segments;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;
    const std::vector<std::string_view> columns = fields(line);
    if (columns.empty() || columns[0] == "key") continue;  // blank or the header
    if (columns.size() < 14) {
      return fail(Error::parse(fmt::format("sysvipc/shm:{}: expected at least 14 columns, got {}",
                                           line_number, columns.size())));
    }
    SysvSegment segment;
    bool ok = number(columns[0], segment.key) && number(columns[1], segment.shmid) &&
              number(columns[2], segment.perms, 8) && number(columns[3], segment.size_bytes) &&
              number(columns[4], segment.creator_pid) && number(columns[5], segment.last_pid) &&
              number(columns[6], segment.attachments) && number(columns[7], segment.uid) &&
              number(columns[8], segment.gid) && number(columns[9], segment.creator_uid) &&
              number(columns[10], segment.creator_gid) &&
              number(columns[11], segment.attach_time) &&
              number(columns[12], segment.detach_time) && number(columns[13], segment.change_time);
    if (ok && columns.size() >= 16) {
      ok = number(columns[14], segment.rss_bytes) && number(columns[15], segment.swap_bytes);
    }
    if (!ok) {
      return fail(Error::parse(
          fmt::format("sysvipc/shm:{}: not a number in '{}'", line_number, std::string(line))));
    }
    segments.push_back(segment);
  }
  return segments;
}

Result<std::vector<SysvSegment>> read_sysvipc_shm(const Context& context) {
  const auto path = context.root.proc("sysvipc/shm");
  auto text = context.root.read(path, std::size_t{16} << 20);
  if (!text) return fail(text.error());
  return parse_sysvipc_shm(*text);
}

}  // namespace headroom
