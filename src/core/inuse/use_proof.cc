#include "core/inuse/use_proof.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "core/kernel/proc_pid_stat.h"
#include "core/kernel/proc_pid_status.h"

namespace headroom {

std::string Visibility::describe() const {
  std::vector<std::string> parts;
  if (outer_pid_namespaces_hidden) {
    parts.emplace_back(
        "this runs in a pid namespace of its own (a container, unshare -p): processes outside "
        "it are invisible");
  }
  if (hidepid)
    parts.emplace_back("/proc is mounted with hidepid: other users' processes are invisible");
  if (!unreadable.empty()) {
    parts.push_back(fmt::format("{} process{} could not be inspected", unreadable.size(),
                                unreadable.size() == 1 ? "" : "es"));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

Visibility visibility_of(const Context& context, const InUseIndex& index,
                         std::span<const int> vouched) {
  Visibility visibility;
  visibility.kernel = context.syscalls;
  visibility.hidepid = index.hidepid();
  visibility.outer_pid_namespaces_hidden = index.outer_pid_namespaces_hidden();
  for (int pid : index.unreadable_pids()) {
    if (std::find(vouched.begin(), vouched.end(), pid) != vouched.end()) continue;
    visibility.unreadable.push_back(pid);
    UnseenProcess process;
    process.pid = pid;
    if (auto status = read_proc_status(context, pid)) {
      process.status_known = true;
      process.command = status->name;
      process.fs_uid = status->fs_uid;
      process.fs_gid = status->fs_gid;
      process.groups = status->groups;
    }
    visibility.unseen.push_back(std::move(process));
  }
  return visibility;
}

namespace {

// Whether an unseen process could use `stat` (search a directory; read or write a FIFO).
bool could_use(const UnseenProcess& process, const walk::FileStat& stat, uid_t caller) {
  // A root caller is refused a process only in a sandbox or another user namespace: every
  // such process counts.
  if (caller == 0 || !process.status_known) return true;
  // For a caller who is not root, root's own processes (sshd, cron, containerd...) cannot
  // be inspected on any host; they do not count (docs/safety.md: what stays unproven).
  if (process.fs_uid == 0) return false;
  const unsigned want = (stat.mode & S_IFMT) == S_IFDIR ? 1U : 6U;
  if (process.fs_uid == stat.owner) return ((stat.mode >> 6) & want) != 0;
  if (process.fs_gid == stat.group ||
      std::find(process.groups.begin(), process.groups.end(), stat.group) != process.groups.end()) {
    return ((stat.mode >> 3) & want) != 0;
  }
  return (stat.mode & want) != 0;
}

}  // namespace

std::optional<std::string> Visibility::unseen_users(const walk::FileStat& stat, uid_t caller,
                                                    std::vector<int>* could) const {
  if (outer_pid_namespaces_hidden) {
    return "processes outside this pid namespace (a container, unshare -p) cannot be seen and "
           "could be using it: run headroom on the host";
  }
  if (hidepid && caller != 0 && (stat.mode & 0077) != 0) {
    return "/proc is mounted with hidepid: other users' processes could be using it unseen";
  }
  std::vector<int> pids;
  std::string names;
  for (const UnseenProcess& process : unseen) {
    if (!could_use(process, stat, caller)) continue;
    if (pids.size() < 5) {
      names += fmt::format("{}{} ({})", pids.empty() ? "" : ", ", process.pid,
                           process.command.empty() ? "?" : process.command);
    }
    pids.push_back(process.pid);
  }
  if (pids.empty()) return std::nullopt;
  if (could != nullptr) could->insert(could->end(), pids.begin(), pids.end());
  return fmt::format(
      "pid {}{} could be using it and cannot be inspected ({}, or vouch that {} nothing "
      "here: --ignore-unreadable {})",
      names, pids.size() > 5 ? fmt::format(" and {} more", pids.size() - 5) : "",
      caller == 0 ? "root cannot read them here either: a sandbox or another user namespace"
                  : "run as root",
      pids.size() == 1 ? "it uses" : "they use", fmt::join(pids, ","));
}

std::string_view to_string(Use use) {
  switch (use) {
    case Use::kUnused:
      return "unused";
    case Use::kInUse:
      return "in use";
    case Use::kUnknown:
      return "unknown";
  }
  return "unknown";
}

UniqueFd open_for_probe(int dir_fd, const char* name, FileId expected) {
  struct stat seen {};
  if (::fstatat(dir_fd, name, &seen, AT_SYMLINK_NOFOLLOW) != 0) return UniqueFd();
  if (!S_ISREG(seen.st_mode) || file_id_of(seen) != expected) {
    errno = ESTALE;
    return UniqueFd();
  }
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.ok()) return fd;
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0 || file_id_of(opened) != expected) {
    errno = ESTALE;
    return UniqueFd();
  }
  return fd;
}

UseAnswer regular_file_use(const InUseIndex& index, const Visibility& visibility, FileId id, int fd,
                           int open_errno) {
  UseAnswer answer;
  answer.holders = holder_pids(index.holders(id));
  if (!answer.holders.empty()) {
    answer.use = Use::kInUse;
    answer.why = describe_holders(index, answer.holders);
    return answer;
  }
  if (fd < 0 && (open_errno == EWOULDBLOCK || open_errno == EAGAIN)) {
    answer.use = Use::kInUse;
    answer.why = "another process holds a lease on it";
    return answer;
  }
  switch (fd >= 0 && visibility.kernel != nullptr ? visibility.kernel->write_lease(fd)
                                                  : LeaseAnswer::kUnknown) {
    case LeaseAnswer::kInUse:
      answer.use = Use::kInUse;
      answer.why =
          "open or mapped by a process headroom cannot inspect (the kernel refused a "
          "lease)";
      return answer;
    case LeaseAnswer::kUnused:
      answer.use = Use::kUnused;
      answer.why = "no process has it open or mapped (the kernel granted an exclusive lease)";
      return answer;
    case LeaseAnswer::kUnknown:
      break;
  }
  if (visibility.complete()) {
    answer.use = Use::kUnused;
    answer.why = "no process has it open or mapped (every process inspected)";
  } else {
    answer.use = Use::kUnknown;
    answer.why = "could not prove it unused: " + visibility.describe();
  }
  return answer;
}

std::string describe_holders(const InUseIndex& index, const std::vector<int>& pids) {
  std::string text = "in use by pid ";
  for (std::size_t i = 0; i < pids.size() && i < 5; ++i) {
    const ProcessInfo* process = index.process(pids[i]);
    text += fmt::format("{}{} ({})", i == 0 ? "" : ", ", pids[i],
                        process != nullptr ? process->command : "?");
  }
  if (pids.size() > 5) text += fmt::format(" and {} more", pids.size() - 5);
  return text;
}

std::vector<int> holder_pids(const std::vector<const Holder*>& holders) {
  std::vector<int> pids;
  pids.reserve(holders.size());
  for (const Holder* holder : holders) pids.push_back(holder->pid);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

}  // namespace headroom
