#include "core/supervise/roles.h"

#include <gtest/gtest.h>

namespace headroom {
namespace {

ProcessIdentity process(pid_t pid, pid_t ppid, std::string name, std::optional<int> rank = {}) {
  ProcessIdentity identity;
  identity.pid = pid;
  identity.ppid = ppid;
  identity.name = std::move(name);
  identity.cmdline = {"/usr/bin/" + identity.name};
  identity.rank = rank;
  return identity;
}

const ProcessIdentity& find(const std::vector<ProcessIdentity>& all, pid_t pid) {
  for (const ProcessIdentity& identity : all) {
    if (identity.pid == pid) return identity;
  }
  throw std::runtime_error("no such pid");
}

TEST(ClassifyRoles, NamesTheMainProcessItsWorkersAndTheShmManager) {
  std::vector<ProcessIdentity> tree = {process(12, 10, "python3"), process(13, 12, "python3"),
                                       process(14, 12, "python3"),
                                       process(15, 12, "torch_shm_manag")};
  classify_roles(tree, 10 + 2);
  EXPECT_EQ(describe_role(find(tree, 12)), "main");
  EXPECT_EQ(describe_role(find(tree, 13)), "DataLoader worker");
  EXPECT_EQ(describe_role(find(tree, 14)), "DataLoader worker");
  EXPECT_EQ(describe_role(find(tree, 15)), "torch_shm_manager");
}

TEST(ClassifyRoles, NamesTorchrunRanksAndTheirWorkers) {
  // torchrun (a python script) -> ranks with RANK set -> their forked workers inherit RANK.
  std::vector<ProcessIdentity> tree = {process(20, 1, "torchrun"), process(21, 20, "python3", 0),
                                       process(22, 20, "python3", 1),
                                       process(23, 22, "python3", 1)};
  classify_roles(tree, 20);
  EXPECT_EQ(describe_role(find(tree, 20)), "main");
  EXPECT_EQ(describe_role(find(tree, 21)), "rank 0");
  EXPECT_EQ(describe_role(find(tree, 22)), "rank 1");
  EXPECT_EQ(describe_role(find(tree, 23)), "DataLoader worker of rank 1");
  EXPECT_EQ(role_id(find(tree, 23).role), "dataloader_worker");
}

// Issue 20 #11: torch.multiprocessing.spawn's processes were "DataLoader worker" in a job
// with no DataLoader. They are "process N" as PyTorch numbers them ("-- Process 1
// terminated with the following error"); the resource tracker is a helper, not a worker.
// (Recorded from mp.spawn(nprocs=2) with gloo under Debian's torch 1.13.)
TEST(ClassifyRoles, SpawnedProcessesAreNumberedAsPytorchNumbersThem) {
  // Each spawned child gets its own pipe: the command lines differ in pipe_handle.
  const auto spawned = [](int pipe) {
    return std::vector<std::string>{"/usr/bin/python3", "-c",
                                    "from multiprocessing.spawn import spawn_main; "
                                    "spawn_main(tracker_fd=7, pipe_handle=" +
                                        std::to_string(pipe) + ")",
                                    "--multiprocessing-fork"};
  };
  std::vector<ProcessIdentity> tree = {process(30, 1, "python3"), process(31, 30, "python3"),
                                       process(32, 30, "python3"), process(33, 30, "python3"),
                                       process(34, 33, "python3")};
  tree[0].cmdline = {"/usr/bin/python3", "train.py"};
  tree[1].cmdline = {"/usr/bin/python3", "-c",
                     "from multiprocessing.resource_tracker import main;main(6)"};
  tree[2].cmdline = spawned(9);
  tree[3].cmdline = spawned(11);
  tree[4].cmdline = spawned(11);  // a DataLoader worker forked by process 1
  classify_roles(tree, 30);
  EXPECT_EQ(describe_role(find(tree, 31)), "process");
  EXPECT_EQ(describe_role(find(tree, 32)), "process 0");
  EXPECT_EQ(describe_role(find(tree, 33)), "process 1");
  EXPECT_EQ(role_id(find(tree, 33).role), "spawned");
  EXPECT_EQ(describe_role(find(tree, 34)), "DataLoader worker of process 1");
}

TEST(ClassifyRoles, APythonChildWithItsOwnCommandLineIsNotAWorker) {
  std::vector<ProcessIdentity> tree = {process(50, 1, "python3"), process(51, 50, "python3")};
  tree[0].cmdline = {"/usr/bin/python3", "train.py"};
  tree[1].cmdline = {"/usr/bin/python3", "evaluate.py"};
  classify_roles(tree, 50);
  EXPECT_EQ(describe_role(find(tree, 51)), "process");
}

TEST(ClassifyRoles, AShellChildIsJustAProcess) {
  std::vector<ProcessIdentity> tree = {process(40, 1, "bash"), process(41, 40, "sleep")};
  classify_roles(tree, 40);
  EXPECT_EQ(describe_role(find(tree, 40)), "main");
  EXPECT_EQ(describe_role(find(tree, 41)), "process");
}

}  // namespace
}  // namespace headroom
