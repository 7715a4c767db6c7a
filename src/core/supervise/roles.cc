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

// multiprocessing's helpers, started by the first spawn-context Process, Queue or
// SemLock: "python -c 'from multiprocessing.resource_tracker import main;main(8)'".
bool multiprocessing_helper(const ProcessIdentity& process) {
  return std::any_of(process.cmdline.begin(), process.cmdline.end(), [](const std::string& arg) {
    return arg.find("multiprocessing.resource_tracker") != std::string::npos ||
           arg.find("multiprocessing.semaphore_tracker") != std::string::npos ||
           arg.find("multiprocessing.forkserver") != std::string::npos;
  });
}

// A fork keeps the parent's argv: a forked DataLoader worker has its parent's command
// line (or one of the two could not be read). A Python child with another command
// line (`subprocess.run(["python", "eval.py"])`) is not a worker.
bool forked_from(const ProcessIdentity& process, const ProcessIdentity& parent) {
  if (process.cmdline.empty() || parent.cmdline.empty()) return process.name == parent.name;
  return process.cmdline == parent.cmdline;
}

bool can_have_workers(ProcessRole role) {
  return role == ProcessRole::kMain || role == ProcessRole::kRank || role == ProcessRole::kSpawned;
}

// Numbers each parent's spawned children from 0 in start order (pids grow within a job).
void number_spawned(std::vector<ProcessIdentity>& processes) {
  std::map<pid_t, std::vector<ProcessIdentity*>> by_parent;
  for (ProcessIdentity& process : processes) {
    if (process.role == ProcessRole::kSpawned) by_parent[process.ppid].push_back(&process);
  }
  for (auto& [parent, children] : by_parent) {
    std::sort(children.begin(), children.end(),
              [](const auto* a, const auto* b) { return a->pid < b->pid; });
    for (std::size_t i = 0; i < children.size(); ++i) {
      children[i]->spawn_index = static_cast<int>(i);
    }
  }
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
    process->worker_of_process.reset();
    process->spawn_index.reset();
    if (is_shm_manager(*process)) {
      process->role = ProcessRole::kShmManager;
    } else if (multiprocessing_helper(*process)) {
      process->role = ProcessRole::kOther;
    } else if (parent != nullptr && can_have_workers(parent->role) && is_python(*process) &&
               is_python(*parent) && forked_from(*process, *parent) && !rank_changed) {
      // Before the spawn test: a worker forked by a spawned process keeps its command line.
      process->role = ProcessRole::kDataLoaderWorker;
      if (parent->role == ProcessRole::kRank) process->worker_of_rank = parent->rank;
    } else if (parent != nullptr && can_have_workers(parent->role) &&
               started_by_multiprocessing(*process) && !rank_changed) {
      process->role = ProcessRole::kSpawned;
    } else if (process->rank.has_value() && (rank_changed || process->pid == main_pid)) {
      process->role = ProcessRole::kRank;
    } else if (process->pid == main_pid) {
      process->role = ProcessRole::kMain;
    } else {
      process->role = ProcessRole::kOther;
    }
  }
  number_spawned(processes);
  for (ProcessIdentity& process : processes) {
    const auto parent = by_pid.find(process.ppid);
    if (process.role == ProcessRole::kDataLoaderWorker && parent != by_pid.end() &&
        parent->second->role == ProcessRole::kSpawned) {
      process.worker_of_process = parent->second->spawn_index;
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
      if (process.worker_of_rank)
        return "DataLoader worker of rank " + std::to_string(*process.worker_of_rank);
      if (process.worker_of_process)
        return "DataLoader worker of process " + std::to_string(*process.worker_of_process);
      return "DataLoader worker";
    case ProcessRole::kSpawned:
      return process.spawn_index ? "process " + std::to_string(*process.spawn_index) : "process";
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
    case ProcessRole::kSpawned:
      return "spawned";
    case ProcessRole::kOther:
      return "other";
  }
  return "other";
}

}  // namespace headroom
