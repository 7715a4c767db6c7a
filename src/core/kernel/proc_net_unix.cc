#include "core/kernel/proc_net_unix.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <unordered_set>

#include "core/kernel/proc_pid_stat.h"

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

bool LiveSockets::maybe_bound(std::string_view path, std::string_view name) const {
  return paths.count(std::string(path)) > 0 || names.count(std::string(name)) > 0;
}

namespace {

bool numeric(std::string_view name) {
  int value = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), value);
  return error == std::errc() && end == name.data() + name.size() && value > 0;
}

void add_table(LiveSockets& live, std::string_view text) {
  for (const std::string& path : parse_proc_net_unix(text)) {
    const std::size_t slash = path.rfind('/');
    live.names.insert(slash == std::string::npos ? path : path.substr(slash + 1));
    live.paths.insert(path);
  }
  ++live.namespaces;
}

}  // namespace

Result<LiveSockets> read_live_sockets(const Context& context) {
  constexpr std::size_t kTableLimit = std::size_t{64} << 20;
  LiveSockets live;
  std::unordered_set<ino_t> seen;
  const std::filesystem::path own = context.root.proc("net/unix");
  auto text = context.root.read(own, kTableLimit);
  if (!text) return fail(text.error());
  struct stat own_info {};
  if (::stat(own.c_str(), &own_info) == 0) seen.insert(own_info.st_ino);
  add_table(live, *text);

  const std::filesystem::path proc = context.root.proc();
  DIR* stream = ::opendir(proc.c_str());
  if (stream == nullptr) return live;
  while (const dirent* entry = ::readdir(stream)) {
    if (!numeric(entry->d_name)) continue;
    const std::filesystem::path table = proc / entry->d_name / "net/unix";
    struct stat info {};
    if (::stat(table.c_str(), &info) != 0) {
      const int pid = std::stoi(entry->d_name);
      if (errno != ENOENT && errno != ESRCH && !is_kernel_thread(context, pid))
        live.unread_pids.push_back(pid);
      continue;
    }
    if (!seen.insert(info.st_ino).second) continue;
    if (auto other = context.root.read(table, kTableLimit)) {
      add_table(live, *other);
    } else if (!is_kernel_thread(context, std::stoi(entry->d_name))) {
      live.unread_pids.push_back(std::stoi(entry->d_name));
    }
  }
  ::closedir(stream);
  return live;
}

}  // namespace headroom
