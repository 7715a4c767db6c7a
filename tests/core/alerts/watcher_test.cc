// The Watcher's own defaults: an ETA alert needs a trend spanning a quarter of
// the window, so a few seconds of noisy samples (or one write after a flat
// stretch) do not fire "full in 30m" right after start.

#include "core/alerts/watcher.h"

#include <gtest/gtest.h>

#include "core/fake_syscalls.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;

Sample memory_at(int second, std::uint64_t available) {
  Sample sample;
  sample.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 + second));
  sample.monotonic = std::chrono::steady_clock::time_point(std::chrono::seconds(second));
  sample.memory = MemorySample{64 * kGiB, available, 0, 0};
  return sample;
}

// 20 GiB left of 64, falling 100 MiB a second: full in under 4 minutes.
std::uint64_t falling(int second) {
  return 20 * kGiB - static_cast<std::uint64_t>(second) * (std::uint64_t{100} << 20);
}

bool memory_eta_fired(const WatchStep& step) {
  for (const AlertEvent& event : step.events) {
    if (event.rule == "memory_fill_eta" && event.kind == AlertKind::kFiring) return true;
  }
  return false;
}

/// The second (one sample a second) at which memory_fill_eta first fires; -1: never.
int first_memory_eta_alert(const WatchOptions& options) {
  const Context context;
  Watcher watcher(context, options);
  for (int second = 0; second <= 20; ++second) {
    if (memory_eta_fired(watcher.feed(memory_at(second, falling(second))))) return second;
  }
  return -1;
}

TEST(Watcher, AnEtaAlertWaitsForATrendOfAQuarterOfTheWindow) {
  WatchOptions options;
  options.window = std::chrono::seconds(40);  // min span: 10 s
  EXPECT_EQ(first_memory_eta_alert(options), 10);
}

TEST(Watcher, AnExplicitMinimumSpanIsKept) {
  WatchOptions options;
  options.window = std::chrono::seconds(40);
  options.alerts.eta_min_span = std::chrono::seconds(3);
  EXPECT_EQ(first_memory_eta_alert(options), 3);
}

// The paths a watch measures are worked out at its first sample and kept: a reload that
// names other dirs is measured at the next sample, the old ones no more.
TEST(Watcher, AReconfiguredWatchMeasuresTheNewDirs) {
  testing::ScratchRoot root;
  std::filesystem::create_directories(root.path() / "data/a");
  std::filesystem::create_directories(root.path() / "data/b");
  testing::FakeSyscalls syscalls;
  syscalls.set_fs(root.path(), FsStats{100 * kGiB, 50 * kGiB, 40 * kGiB, 1000, 500});
  const auto watched = [](const WatchStep& step) {
    std::vector<std::string> paths;
    for (const FilesystemSample& filesystem : step.sample.filesystems) {
      paths.push_back(filesystem.path);
    }
    return paths;
  };
  WatchOptions options;
  options.sample.temp_dir = false;
  options.sample.shm = false;
  options.sample.dirs = {"/data/a"};
  Watcher watcher(root.context(syscalls), options);
  auto first = watcher.step();
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(watched(*first), std::vector<std::string>{"/data/a"});
  options.sample.dirs = {"/data/b"};
  watcher.reconfigure(options);
  auto second = watcher.step();
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(watched(*second), std::vector<std::string>{"/data/b"});
}

}  // namespace
}  // namespace headroom
