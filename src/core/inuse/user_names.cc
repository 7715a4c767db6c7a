#include "core/inuse/user_names.h"

#include <charconv>

namespace headroom {

std::unordered_map<uid_t, std::string> parse_passwd(std::string_view text) {
  std::unordered_map<uid_t, std::string> names;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    // name:password:uid:gid:gecos:home:shell
    const std::size_t first = line.find(':');
    if (first == std::string_view::npos || first == 0) continue;
    const std::size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::size_t third = line.find(':', second + 1);
    if (third == std::string_view::npos) continue;
    const std::string_view uid_text = line.substr(second + 1, third - second - 1);
    uid_t uid = 0;
    const auto parsed = std::from_chars(uid_text.data(), uid_text.data() + uid_text.size(), uid);
    if (parsed.ec != std::errc() || parsed.ptr != uid_text.data() + uid_text.size()) continue;
    names.emplace(uid, std::string(line.substr(0, first)));  // the first line wins, as getpwuid
  }
  return names;
}

std::string UserNames::name(uid_t uid) {
  if (!loaded_) {
    loaded_ = true;
    if (auto text = context_.root.read(context_.root.host("/etc/passwd"), std::size_t{8} << 20)) {
      names_ = parse_passwd(*text);
    }
  }
  const auto found = names_.find(uid);
  return found != names_.end() ? found->second : std::to_string(uid);
}

}  // namespace headroom
