#include "core/kernel/vmstat.h"

#include <fmt/format.h>

#include <charconv>

namespace headroom {

Result<Vmstat> parse_vmstat(std::string_view text) {
  Vmstat vmstat;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++line_number;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) {
      return fail(Error::parse(fmt::format("vmstat:{}: missing value", line_number)));
    }
    const std::string_view name = line.substr(0, space);
    const std::string_view digits = line.substr(space + 1);
    std::uint64_t value = 0;
    const auto [rest, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc{} || rest != digits.data() + digits.size()) {
      return fail(Error::parse(fmt::format("vmstat:{}: bad value '{}'", line_number, digits)));
    }
    if (name == "oom_kill") vmstat.oom_kill = value;
  }
  return vmstat;
}

Result<Vmstat> read_vmstat(const Context& context) {
  return context.root.read(context.root.proc("vmstat")).and_then(parse_vmstat);
}

}  // namespace headroom
