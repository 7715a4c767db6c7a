#include "core/postmortem/python_exception.h"

#include <charconv>

namespace headroom {

namespace {

constexpr std::size_t kMaxText = 300;
// Lines of other processes' output interleaved in a traceback before its last line.
constexpr int kMaxStrayLines = 20;

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::optional<int> number_at(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// Strips torchrun's "[rank1]: " (and its "[default1]:" of older versions), returning the rank.
std::optional<int> strip_rank_prefix(std::string_view& line) {
  if (!starts_with(line, "[")) return std::nullopt;
  const std::size_t close = line.find("]:");
  if (close == std::string_view::npos || close > 16) return std::nullopt;
  std::string_view inside = line.substr(1, close - 1);
  for (const std::string_view word : {"rank", "default"}) {
    if (starts_with(inside, word)) inside.remove_prefix(word.size());
  }
  const std::optional<int> rank = number_at(inside);
  if (!rank) return std::nullopt;
  line.remove_prefix(close + 2);
  if (starts_with(line, " ")) line.remove_prefix(1);
  return rank;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

// "torch.multiprocessing.spawn.ProcessRaisedException: ..." -> "ProcessRaisedException";
// "" when the line is not an exception's (a dotted name, then ':' or the end).
std::string_view exception_type(std::string_view line) {
  if (line.empty() || !((line[0] >= 'A' && line[0] <= 'Z') || (line[0] >= 'a' && line[0] <= 'z') ||
                        line[0] == '_')) {
    return {};
  }
  std::size_t end = 0;
  while (end < line.size() && is_name_char(line[end])) ++end;
  if (end < line.size() && line[end] != ':') return {};
  std::string_view name = line.substr(0, end);
  const std::size_t dot = name.rfind('.');
  if (dot != std::string_view::npos) name.remove_prefix(dot + 1);
  // Exception classes are CamelCase: "Error", "Exception", "Interrupt", "Exit", "Full", ...
  if (name.empty() || name[0] < 'A' || name[0] > 'Z') return {};
  return name;
}

// "process 1 terminated with exit code 1" / "with signal SIGKILL" (ProcessExitedException).
std::optional<int> exited_process(std::string_view text) {
  constexpr std::string_view kProcess = "process ";
  const std::size_t at = text.find(kProcess);
  if (at == std::string_view::npos || text.find(" terminated with ", at) == std::string_view::npos)
    return std::nullopt;
  return number_at(text.substr(at + kProcess.size()));
}

}  // namespace

std::optional<RaisedException> last_python_exception(std::string_view output) {
  std::optional<RaisedException> last;
  std::optional<int> header;  // "-- Process N terminated with the following error:"
  std::uint64_t header_line = 0;
  bool in_traceback = false;
  std::optional<int> traceback_process;
  int stray = 0;
  std::uint64_t number = 0;
  while (!output.empty()) {
    const std::size_t newline = output.find('\n');
    std::string_view line = output.substr(0, newline);
    output.remove_prefix(newline == std::string_view::npos ? output.size() : newline + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // A progress bar redrawn with '\r' before the line: what the terminal shows last.
    const std::size_t cr = line.rfind('\r');
    if (cr != std::string_view::npos) line.remove_prefix(cr + 1);
    const std::optional<int> rank = strip_rank_prefix(line);

    constexpr std::string_view kHeader = "-- Process ";
    if (starts_with(line, kHeader) &&
        line.find("terminated with the following error") != std::string_view::npos) {
      header = number_at(line.substr(kHeader.size()));
      header_line = number;
      continue;
    }
    if (line.find("Traceback (most recent call last):") != std::string_view::npos) {
      in_traceback = true;
      stray = 0;
      traceback_process = header && number - header_line <= 2 ? header : std::nullopt;
      continue;
    }
    if (!in_traceback || line.empty() || line[0] == ' ' || line[0] == '\t') continue;
    const std::string_view type = exception_type(line);
    if (type.empty()) {
      if (++stray > kMaxStrayLines) in_traceback = false;
      continue;
    }
    in_traceback = false;
    RaisedException raised;
    raised.line = number;
    raised.text = std::string(line.substr(0, kMaxText));
    raised.type = std::string(type);
    raised.process_index = traceback_process ? traceback_process : exited_process(line);
    raised.rank = rank;
    last = std::move(raised);
  }
  return last;
}

}  // namespace headroom
