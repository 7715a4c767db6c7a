#pragma once
// Which part of a training job a process is: the command headroom started, a
// torchrun rank, a DataLoader worker, PyTorch's shared-memory manager. The
// post-mortem names a dead pid by its role ("DataLoader worker 4242 of rank 1").

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace headroom {

enum class ProcessRole { kMain, kRank, kDataLoaderWorker, kShmManager, kSpawned, kOther };

/// What classification needs to know about one process of the job.
struct ProcessIdentity {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string name;                  ///< comm
  std::vector<std::string> cmdline;  ///< argv (empty when unreadable)
  std::optional<int> rank;           ///< RANK from its environment
  std::optional<int> local_rank;     ///< LOCAL_RANK from its environment
  ProcessRole role = ProcessRole::kOther;
  std::optional<int> worker_of_rank;  ///< for a DataLoader worker inside a rank
  /// For a process multiprocessing's spawn started (kSpawned): its index among its
  /// parent's, in start order, as torch.multiprocessing.spawn numbers them ("process 1").
  std::optional<int> spawn_index;
  std::optional<int> worker_of_process;  ///< for a DataLoader worker inside a kSpawned process
};

/// Assigns roles to every process of a job tree (pure: uses only the identities).
/// `main_pid` is the process headroom started. Rules: the main process is
/// "main" unless it is a rank itself; a process whose RANK differs from its
/// parent's is "rank N"; torch_shm_manager by name; a Python process forked by
/// a Python main, rank or spawned process (same command line as its parent) is a
/// DataLoader worker; a process multiprocessing's spawn started
/// (`torch.multiprocessing.spawn`, a spawn-context Pool or DataLoader) is
/// "process N", N counting its parent's from 0 as PyTorch does; multiprocessing's
/// own helpers (resource tracker, forkserver) and the rest are "process".
void classify_roles(std::vector<ProcessIdentity>& processes, pid_t main_pid);

/// "main", "rank 3", "DataLoader worker", "DataLoader worker of rank 1", "process 1",
/// "DataLoader worker of process 1", "torch_shm_manager", "process".
[[nodiscard]] std::string describe_role(const ProcessIdentity& process);
/// The stable JSON name of a role: "main", "rank", "dataloader_worker", "torch_shm_manager",
/// "spawned", "other".
[[nodiscard]] std::string_view role_id(ProcessRole role);

}  // namespace headroom
