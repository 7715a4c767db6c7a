#include "core/supervise/roles.h"

#include <algorithm>
#include <map>

namespace headroom {

namespace {

std::string_view basename(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_python(const ProcessIdentity& process) {
  if (process.name.rfind("python", 0) == 0) return true;
  return !process.cmdline.empty() && basename(process.cmdline.front()).rfind("python", 0) == 0;
}

bool is_shm_manager(const ProcessIdentity& process) {
  // comm is truncated to 15 bytes: "torch_shm_manag".
  if (process.name.rfind("torch_shm_manag", 0) == 0) return true;
  return !process.cmdline.empty() && basename(process.cmdline.front()) == "torch_shm_manager";
}

bool started_by_multiprocessing(const ProcessIdentity& process) {
  // The spawn and forkserver start methods exec "python -c 'from multiprocessing.spawn import
  // spawn_main; ...'" (or "... --multiprocessing-fork").
  return std::any_of(process.cmdline.begin(), process.cmdline.end(), [](const std::string& arg) {
    return arg.find("multiprocessing.spawn") != std::string::npos ||
           arg.find("--multiprocessing-fork") != std::string::npos;
  });
}

}  // namespace

void classify_roles(std::vector<ProcessIdentity>& processes, pid_t main_pid) {
  std::map<pid_t, ProcessIdentity*> by_pid;
  for (ProcessIdentity& process : processes) by_pid[process.pid] = &process;
  // Parents before children: roles of children depend on their parent's role.
  std::vector<ProcessIdentity*> ordered;
  std::map<pid_t, int> depth;
  const auto depth_of = [&](const ProcessIdentity& process) {
    int level = 0;
    pid_t parent = process.ppid;
    while (level < 64) {
      const auto found = by_pid.find(parent);
      if (found == by_pid.end()) break;
      parent = found->second->ppid;
      ++level;
    }
    return level;
  };
  for (ProcessIdentity& process : processes) {
    depth[process.pid] = depth_of(process);
    ordered.push_back(&process);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const auto* a, const auto* b) { return depth[a->pid] < depth[b->pid]; });

  for (ProcessIdentity* process : ordered) {
    const auto parent_found = by_pid.find(process->ppid);
    const ProcessIdentity* parent = parent_found == by_pid.end() ? nullptr : parent_found->second;
    const bool rank_changed =
        process->rank.has_value() &&
        (parent == nullptr || parent->rank != process->rank || parent->role == ProcessRole::kOther);
    process->worker_of_rank.reset();
    if (is_shm_manager(*process)) {
      process->role = ProcessRole::kShmManager;
    } else if (parent != nullptr &&
               (parent->role == ProcessRole::kMain || parent->role == ProcessRole::kRank) &&
               ((is_python(*process) && is_python(*parent) && !rank_changed) ||
                started_by_multiprocessing(*process))) {
      process->role = ProcessRole::kDataLoaderWorker;
      if (parent->role == ProcessRole::kRank) process->worker_of_rank = parent->rank;
    } else if (process->rank.has_value() && (rank_changed || process->pid == main_pid)) {
      process->role = ProcessRole::kRank;
    } else if (process->pid == main_pid) {
      process->role = ProcessRole::kMain;
    } else {
      process->role = ProcessRole::kOther;
    }
  }
}

std::string describe_role(const ProcessIdentity& process) {
  switch (process.role) {
    case ProcessRole::kMain:
      return "main";
    case ProcessRole::kRank:
      return "rank " + std::to_string(process.rank.value_or(-1));
    case ProcessRole::kDataLoaderWorker:
      return process.worker_of_rank
                 ? "DataLoader worker of rank " + std::to_string(*process.worker_of_rank)
                 : "DataLoader worker";
    case ProcessRole::kShmManager:
      return "torch_shm_manager";
    case ProcessRole::kOther:
      return "process";
  }
  return "process";
}

std::string_view role_id(ProcessRole role) {
  switch (role) {
    case ProcessRole::kMain:
      return "main";
    case ProcessRole::kRank:
      return "rank";
    case ProcessRole::kDataLoaderWorker:
      return "dataloader_worker";
    case ProcessRole::kShmManager:
      return "torch_shm_manager";
    case ProcessRole::kOther:
      return "other";
  }
  return "other";
}

}  // namespace headroom
