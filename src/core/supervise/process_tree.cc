#include "core/supervise/process_tree.h"

#include <dirent.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <set>

#include "core/kernel/limits.h"
#include "core/kernel/proc_pid_files.h"

namespace headroom {

namespace {

constexpr std::size_t kMaxRemembered = 8192;

std::vector<pid_t> list_pids(const Context& context) {
  std::vector<pid_t> pids;
  DIR* dir = ::opendir(context.root.proc().c_str());
  if (dir == nullptr) return pids;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) == 0) continue;
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error == std::errc() && end == name.data() + name.size()) pids.push_back(pid);
  }
  ::closedir(dir);
  return pids;
}

std::optional<int> to_int(const std::map<std::string, std::string>& env, const std::string& key) {
  const auto found = env.find(key);
  if (found == env.end()) return std::nullopt;
  int value = 0;
  const std::string& text = found->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

ProcessTreeSampler::ProcessTreeSampler(Context context, pid_t ancestor, pid_t main_pid)
    : context_(std::move(context)), ancestor_(ancestor), main_pid_(main_pid) {}

ProcessIdentity ProcessTreeSampler::identify(const ProcStatus& status) {
  auto cmdline = read_proc_cmdline(context_, status.pid);
  const auto known = seen_.find(status.pid);
  // A child seen between fork and exec has its parent's name and command line (and
  // environment: no RANK yet); exec of the same interpreter keeps the name, so the
  // command line is what tells that it has since become another program. (A zombie's
  // command line reads empty: that is no exec.)
  if (known != seen_.end() && known->second.name == status.name &&
      (!cmdline || cmdline->empty() || *cmdline == known->second.cmdline)) {
    ProcessIdentity identity = known->second;
    identity.ppid = status.ppid;  // orphans move to headroom
    return identity;
  }
  // New pid, or the same pid after exec: read what does not change afterwards.
  ProcessIdentity identity;
  identity.pid = status.pid;
  identity.ppid = status.ppid;
  identity.name = status.name;
  if (cmdline) identity.cmdline = std::move(*cmdline);
  if (auto env = read_proc_environ(context_, status.pid, {"RANK", "LOCAL_RANK"})) {
    identity.rank = to_int(*env, "RANK");
    identity.local_rank = to_int(*env, "LOCAL_RANK");
  }
  Context process = context_;  // the limits probe reads the context's pid
  process.pid = std::to_string(status.pid);
  std::string source;
  auto limit = read_open_files_limit(process, source);
  fd_limits_[status.pid] = limit ? std::optional<std::uint64_t>(limit->soft) : std::nullopt;
  return identity;
}

TreeSample ProcessTreeSampler::sample() {
  TreeSample tree;
  tree.time =
      context_.syscalls != nullptr ? context_.syscalls->now() : std::chrono::system_clock::now();
  // Read every process's status once, then keep the descendants of the ancestor.
  std::map<pid_t, ProcStatus> statuses;
  for (const pid_t pid : list_pids(context_)) {
    if (auto status = read_proc_status(context_, pid)) statuses.emplace(pid, std::move(*status));
  }
  std::set<pid_t> in_tree;
  bool grew = true;
  while (grew) {  // parents first: a few passes cover any depth
    grew = false;
    for (const auto& [pid, status] : statuses) {
      if (in_tree.count(pid) == 0 &&
          (status.ppid == ancestor_ || in_tree.count(status.ppid) != 0)) {
        in_tree.insert(pid);
        grew = true;
      }
    }
  }
  std::vector<ProcessIdentity> identities;
  identities.reserve(in_tree.size());
  for (const pid_t pid : in_tree) identities.push_back(identify(statuses.at(pid)));
  classify_roles(identities, main_pid_);
  for (ProcessIdentity& identity : identities) {
    const ProcStatus& status = statuses.at(identity.pid);
    ProcessSample process;
    process.rss_bytes = status.rss_bytes;
    process.shmem_bytes = status.rss_shmem_bytes;
    auto fds = count_proc_fds(context_, identity.pid);
    if (fds) {
      process.fds = *fds;
    } else {
      tree.unreadable.push_back({fmt::format("pid {} fds", identity.pid), fds.error()});
    }
    process.fd_limit = fd_limits_[identity.pid];
    tree.rss_bytes += process.rss_bytes;
    tree.shmem_bytes += process.shmem_bytes.value_or(0);
    if (seen_.size() < kMaxRemembered || seen_.count(identity.pid) != 0)
      seen_[identity.pid] = identity;
    process.identity = std::move(identity);
    tree.processes.push_back(std::move(process));
  }
  return tree;
}

std::optional<ProcessIdentity> ProcessTreeSampler::known(pid_t pid) const {
  const auto found = seen_.find(pid);
  if (found == seen_.end()) return std::nullopt;
  return found->second;
}

}  // namespace headroom
