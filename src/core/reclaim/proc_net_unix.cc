#include "core/reclaim/proc_net_unix.h"

namespace headroom {

std::unordered_set<std::string> parse_proc_net_unix(std::string_view text) {
  std::unordered_set<std::string> paths;
  bool header = true;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (header) {
      header = false;
      continue;
    }
    // Seven blank-separated columns, then the path (which may contain blanks).
    std::size_t at = 0;
    for (int column = 0; column < 7 && at < line.size(); ++column) {
      while (at < line.size() && line[at] == ' ') ++at;
      while (at < line.size() && line[at] != ' ') ++at;
    }
    while (at < line.size() && line[at] == ' ') ++at;
    const std::string_view path = line.substr(at);
    if (!path.empty() && path.front() != '@') paths.emplace(path);
  }
  return paths;
}

Result<std::unordered_set<std::string>> read_proc_net_unix(const Context& context) {
  auto text = context.root.read(context.root.proc("net/unix"), std::size_t{64} << 20);
  if (!text) return fail(text.error());
  return parse_proc_net_unix(*text);
}

}  // namespace headroom
