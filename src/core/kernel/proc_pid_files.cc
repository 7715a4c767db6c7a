#include "core/kernel/proc_pid_files.h"

#include <dirent.h>

#include <cerrno>

namespace headroom {

std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> parts;
  while (!text.empty()) {
    const std::size_t end = text.find('\0');
    parts.emplace_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return parts;
}

std::map<std::string, std::string> parse_environ(std::string_view text,
                                                 const std::vector<std::string_view>& wanted) {
  std::map<std::string, std::string> found;
  for (const std::string& entry : split_nul(text)) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos) continue;
    const std::string_view name(entry.data(), equals);
    for (const std::string_view want : wanted) {
      if (name == want) found.emplace(std::string(name), entry.substr(equals + 1));
    }
  }
  return found;
}

Result<std::vector<std::string>> read_proc_cmdline(const Context& context, pid_t pid) {
  auto text = context.root.read(context.root.proc(std::to_string(pid) + "/cmdline"), 64 * 1024);
  if (!text) return fail(text.error());
  return split_nul(*text);
}

Result<std::map<std::string, std::string>> read_proc_environ(
    const Context& context, pid_t pid, const std::vector<std::string_view>& wanted) {
  auto text = context.root.read(context.root.proc(std::to_string(pid) + "/environ"), 1 << 20);
  if (!text) return fail(text.error());
  return parse_environ(*text, wanted);
}

Result<std::uint64_t> count_proc_fds(const Context& context, pid_t pid) {
  const auto path = context.root.proc(std::to_string(pid) + "/fd");
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return fail(Error::from_errno(errno, path.string()));
  std::uint64_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

}  // namespace headroom
