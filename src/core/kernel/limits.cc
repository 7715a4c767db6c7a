// /proc/<pid>/limits parser; see limits.h for the format and its quirks.
#include "core/kernel/limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/kernel/text.h"

namespace headroom {

namespace {

// fs/proc/base.c prints the name with "%-25s " (25 columns and a space).
constexpr std::size_t kNameWidth = 25;

// The blank-separated words of `text`.
std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> words;
  for (text = trim_blanks(text); !text.empty(); text = trim_blanks(text)) {
    const std::size_t end = std::min(text.find(' '), text.size());
    words.push_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return words;
}

bool parse_value(std::string_view word, std::uint64_t& out) {
  if (word == "unlimited") {
    out = Limit::kUnlimited;
    return true;
  }
  return std::from_chars(word.data(), word.data() + word.size(), out).ec == std::errc() &&
         !word.empty();
}

}  // namespace

Result<std::vector<LimitEntry>> parse_limits(std::string_view text) {
  std::vector<LimitEntry> rows;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    ++line_number;
    if (trim_blanks(line).empty() || line.substr(0, 5) == "Limit") continue;  // the header
    if (line.size() <= kNameWidth) {
      return fail(Error::parse(fmt::format("limits:{}: line too short", line_number)));
    }
    const std::vector<std::string_view> words = words_of(line.substr(kNameWidth));
    LimitEntry entry;
    entry.name = std::string(trim_blanks(line.substr(0, kNameWidth)));
    if (words.size() < 2 || words.size() > 3 || !parse_value(words[0], entry.limit.soft) ||
        !parse_value(words[1], entry.limit.hard)) {
      return fail(Error::parse(
          fmt::format("limits:{}: expected '<soft> <hard> [units]' after the name", line_number)));
    }
    if (words.size() == 3) entry.units = std::string(words[2]);
    rows.push_back(std::move(entry));
  }
  return rows;
}

Result<std::vector<LimitEntry>> read_limits(const Context& context) {
  auto text = context.root.read(context.process_file("limits"));
  if (!text) return fail(text.error());
  return parse_limits(*text);
}

std::optional<Limit> find_limit(const std::vector<LimitEntry>& rows, std::string_view name) {
  for (const LimitEntry& row : rows) {
    if (row.name == name) return row.limit;
  }
  return std::nullopt;
}

Result<Limit> read_limit(const Context& context, std::string_view name) {
  auto rows = read_limits(context);
  if (!rows) return fail(rows.error());
  if (auto limit = find_limit(*rows, name)) return *limit;
  return fail(Error::parse(fmt::format(
      "{}: no '{}' row", context.root.display(context.process_file("limits")).string(), name)));
}

Result<Limit> read_open_files_limit(const Context& context, std::string& source) {
  auto limit = read_limit(context, "Max open files");
  if (limit) {
    source = context.root.display(context.process_file("limits")).string();
    return *limit;
  }
  // getrlimit() answers for headroom itself, which is the examined process only for "self".
  if (context.pid != "self" || context.syscalls == nullptr) return fail(limit.error());
  source = "getrlimit(RLIMIT_NOFILE)";
  return context.syscalls->open_files_limit();
}

}  // namespace headroom
