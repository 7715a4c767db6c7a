// PSI reader; see pressure.h for the format and its quirks.

#include "core/kernel/pressure.h"

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "core/kernel/text.h"

namespace headroom {

namespace {

// Parses "avg10=0.12 avg60=0.05 avg300=0.01 total=12345" into `line`.
bool parse_fields(std::string_view text, PressureLine& line) {
  int seen = 0;
  while (!text.empty()) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    const std::size_t end = std::min(text.find(' '), text.size());
    const std::string_view field = text.substr(0, end);
    text.remove_prefix(end);
    const std::size_t equals = field.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view key = field.substr(0, equals);
    const std::string_view value = field.substr(equals + 1);
    const char* first = value.data();
    const char* last = value.data() + value.size();
    if (key == "total") {
      if (std::from_chars(first, last, line.total_us).ec != std::errc()) return false;
      ++seen;
      continue;
    }
    const std::optional<double> number = parse_decimal(value);
    if (!number) return false;
    if (key == "avg10") line.avg10 = *number;
    if (key == "avg60") line.avg60 = *number;
    if (key == "avg300") line.avg300 = *number;
    ++seen;
  }
  return seen == 4;
}

}  // namespace

Result<Pressure> parse_pressure(std::string_view text) {
  Pressure pressure;
  bool have_some = false;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::string_view line = next_line(text);
    ++line_number;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    const std::string_view kind = line.substr(0, space);
    PressureLine values;
    if (space == std::string_view::npos || !parse_fields(line.substr(space + 1), values)) {
      return fail(Error::parse(fmt::format("pressure:{}: malformed line", line_number)));
    }
    if (kind == "some") {
      pressure.some = values;
      have_some = true;
    } else if (kind == "full") {
      pressure.full = values;
    }
  }
  if (!have_some) return fail(Error::parse("pressure: no \"some\" line"));
  return pressure;
}

Result<Pressure> read_pressure(const Context& context, std::string_view resource) {
  const std::filesystem::path path = context.root.proc("pressure/" + std::string(resource));
  auto text = context.root.read(path, 4096, FileEnd::kShortRead);
  if (!text) return fail(text.error());
  auto pressure = parse_pressure(*text);
  if (!pressure) {
    return fail(
        Error::parse(context.root.display(path).string() + ": " + pressure.error().message));
  }
  return pressure;
}

}  // namespace headroom
