// /proc/sys/fs/file-nr parser; see file_nr.h for the format and its quirks.
#include "core/kernel/file_nr.h"

#include <array>
#include <charconv>

namespace headroom {

double FileNr::used_percent() const {
  if (max == 0) return 0.0;
  return 100.0 * static_cast<double>(allocated) / static_cast<double>(max);
}

Result<FileNr> parse_file_nr(std::string_view text) {
  std::array<std::uint64_t, 3> values{};
  const char* cursor = text.data();
  const char* const end = text.data() + text.size();
  for (std::uint64_t& value : values) {
    while (cursor < end && (*cursor == ' ' || *cursor == '\t')) ++cursor;
    const auto parsed = std::from_chars(cursor, end, value);
    if (parsed.ec != std::errc()) {
      return fail(Error::parse("file-nr: expected three numbers 'allocated unused max'"));
    }
    cursor = parsed.ptr;
  }
  return FileNr{values[0], values[1], values[2]};
}

Result<FileNr> read_file_nr(const Context& context) {
  const auto path = context.root.proc("sys/fs/file-nr");
  auto text = context.root.read(path, std::size_t{1} << 20, FileEnd::kShortRead);
  if (!text) return fail(text.error());
  auto parsed = parse_file_nr(*text);
  if (!parsed) return fail(Error::parse(path.string() + ": " + parsed.error().message));
  return parsed;
}

}  // namespace headroom
