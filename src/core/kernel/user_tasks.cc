// Tasks of one user over /proc; see user_tasks.h for the sources and quirks.
#include "core/kernel/user_tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <system_error>

#include "core/kernel/proc_pid_status.h"
#include "core/kernel/text.h"

namespace headroom {

namespace {

bool number(std::string_view text, std::uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool all_digits(const std::string& name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<std::uint64_t> parse_cpu_list_count(std::string_view text) {
  text = trim_blanks(text);
  std::uint64_t count = 0;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(','), text.size());
    const std::string_view range = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t dash = range.find('-');
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    const bool parsed = dash == std::string_view::npos ? number(range, first) && number(range, last)
                                                       : number(range.substr(0, dash), first) &&
                                                             number(range.substr(dash + 1), last);
    if (!parsed || last < first) {
      return fail(Error::parse(fmt::format("cpu list: bad range '{}'", range)));
    }
    count += last - first + 1;
  }
  if (count == 0) return fail(Error::parse("cpu list: empty"));
  return count;
}

std::optional<std::string_view> status_field(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && line.substr(0, colon) == key) {
      return trim_blanks(line.substr(colon + 1));
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> cpus_allowed(std::string_view status_text) {
  const auto list = status_field(status_text, "Cpus_allowed_list");
  if (!list) return std::nullopt;
  auto count = parse_cpu_list_count(*list);
  return count ? std::optional<std::uint64_t>(*count) : std::nullopt;
}

Result<UserTasks> read_user_tasks(const Context& context) {
  const auto own_path = context.process_file("status");
  auto own_text = context.root.read(own_path);
  if (!own_text) return fail(own_text.error());
  auto own = parse_proc_status(*own_text);
  if (!own) return fail(Error::parse(own_path.string() + ": " + own.error().message));
  UserTasks user;
  user.uid = own->uid;
  user.cpus_allowed = cpus_allowed(*own_text);
  std::error_code error;
  std::filesystem::directory_iterator entry(context.root.proc(), error);
  if (error) return fail(Error::from_errno(error.value(), context.root.proc().string()));
  for (const std::filesystem::directory_iterator end; entry != end; entry.increment(error)) {
    if (error) break;
    const std::string name = entry->path().filename().string();
    if (!all_digits(name)) continue;
    pid_t pid = 0;
    std::from_chars(name.data(), name.data() + name.size(), pid);
    auto status = read_proc_status(context, pid);
    if (!status || status->uid != user.uid) continue;  // exited since the listing, or another user
    user.tasks += std::max<std::uint64_t>(status->threads, 1);
    ++user.processes;
  }
  return user;
}

}  // namespace headroom
