#include "core/supervise/process_tree.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string_view>

#include "core/scratch_root.h"

namespace headroom {
namespace {

using namespace std::string_view_literals;

void write(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

void process(const std::filesystem::path& root, pid_t pid, pid_t ppid, std::string_view cmdline,
             std::string_view environ = ""sv) {
  const auto dir = root / "proc" / std::to_string(pid);
  write(dir / "status", "Name:\tpython3\nPid:\t" + std::to_string(pid) + "\nPPid:\t" +
                            std::to_string(ppid) + "\nVmRSS:\t1024 kB\n");
  write(dir / "cmdline", cmdline);
  write(dir / "environ", environ);
  std::filesystem::create_directories(dir / "fd");
}

const ProcessSample* find(const TreeSample& tree, pid_t pid) {
  for (const ProcessSample& sample : tree.processes) {
    if (sample.identity.pid == pid) return &sample;
  }
  return nullptr;
}

// torch.multiprocessing.spawn forks then execs the same python3: a sample between the
// two sees the parent's name and command line. The next sample must see the exec.
TEST(ProcessTreeSampler, AChildSeenBeforeItsExecIsIdentifiedAgainAfterIt) {
  testing::ScratchRoot root;
  Context context;
  context.root = SysRoot(root.path());
  constexpr std::string_view kMain = "python3\0train.py\0"sv;
  process(root.path(), 100, 1, kMain);
  process(root.path(), 101, 100, kMain);  // forked, not yet exec'd
  ProcessTreeSampler sampler(context, 1, 100);

  const TreeSample before = sampler.sample();
  ASSERT_NE(find(before, 101), nullptr);
  EXPECT_EQ(find(before, 101)->identity.role, ProcessRole::kDataLoaderWorker);

  process(root.path(), 101, 100,
          "python3\0-c\0from multiprocessing.spawn import spawn_main\0--multiprocessing-fork\0"sv,
          "LOCAL_RANK=1\0"sv);
  const TreeSample after = sampler.sample();
  ASSERT_NE(find(after, 101), nullptr);
  EXPECT_EQ(find(after, 101)->identity.role, ProcessRole::kSpawned);
  EXPECT_EQ(find(after, 101)->identity.spawn_index, 0);
  EXPECT_EQ(find(after, 101)->identity.local_rank, 1);  // the environment is read again
  EXPECT_EQ(sampler.known(101)->role, ProcessRole::kSpawned);

  // Once it has exited its command line reads empty (a zombie): it keeps what it was.
  process(root.path(), 101, 100, ""sv);
  const TreeSample zombie = sampler.sample();
  ASSERT_NE(find(zombie, 101), nullptr);
  EXPECT_EQ(find(zombie, 101)->identity.role, ProcessRole::kSpawned);
}

}  // namespace
}  // namespace headroom
