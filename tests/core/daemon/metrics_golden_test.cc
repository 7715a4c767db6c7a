// The whole /metrics text of `headroom watch` on a recorded host
// (tests/fixtures/watch_metrics: a cgroup v2 container with /data on
// /dev/vdb1, PSI, OOM kills) against tests/golden/metrics.prom, as
// node_exporter keeps e2e-output.txt: a renamed series, a lost label or a
// changed sign shows up as a diff to review. Regenerate after an intended
// change with
//   HEADROOM_UPDATE_GOLDEN=1 build/dev/tests/headroom_tests --gtest_filter='MetricsGolden.*'
// and `promtool check metrics < tests/golden/metrics.prom` (the integration
// test test_watch_metrics.py runs it on the golden file and on a live scrape).

#include <gtest/gtest.h>

#include <sstream>

#include "core/alerts/watcher.h"
#include "core/fixture_context.h"
#include "core/golden.h"
#include "daemon/metrics.h"

namespace headroom::daemon {
namespace {

constexpr std::uint64_t kGiB = 1ULL << 30;

FsStats disk(std::uint64_t total, std::uint64_t avail) {
  FsStats stats;
  stats.total_bytes = total;
  stats.free_bytes = avail;
  stats.avail_bytes = avail;
  stats.total_inodes = 1'000'000;
  stats.free_inodes = 900'000;
  return stats;
}

/// Values that depend on the machine running the test, set to 0: what the
/// golden file pins is every name, label, type and help text, and the values
/// that follow from the fixture.
std::string zero_timings(const std::string& page) {
  std::string out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    for (const std::string_view timing :
         {"headroom_probe_duration_seconds{", "headroom_sample_age_seconds ",
          "headroom_last_complete_sample_age_seconds "}) {
      if (line.starts_with(timing)) line = line.substr(0, line.rfind(' ')) + " 0";
    }
    if (line.starts_with("headroom_build_info{version=\"")) {
      line = "headroom_build_info{version=\"VERSION\"} 1";
    }
    out += line + "\n";
  }
  return out;
}

TEST(MetricsGolden, TheWholeMetricsPageOfAFixtureHost) {
  testing::FakeSyscalls syscalls;
  const std::filesystem::path root = testing::fixture_path("watch_metrics");
  Context context = testing::fixture_context("watch_metrics", syscalls);
  WatchOptions options;
  options.sample.dirs = {"/data/ckpt"};
  options.sample.process_fds = false;  // the daemon's: file handles of the host
  Watcher watcher(context, options);
  // /data fills 1 GiB every 5 s, 90 GiB used of 100: warn now, full in ~50 s.
  // /tmp (the overlay) and /dev/shm stay put.
  syscalls.set_fs(root / "tmp", disk(200 * kGiB, 150 * kGiB));
  syscalls.set_fs(root / "dev/shm", disk(1 * kGiB, 1 * kGiB));
  WatchStep step;
  for (std::uint64_t i = 0; i < 6; ++i) {
    syscalls.set_fs(root / "data", disk(100 * kGiB, (15 - i) * kGiB));
    auto taken = watcher.step();
    ASSERT_TRUE(taken) << taken.error().message;
    step = *taken;
    syscalls.now_ += std::chrono::seconds(5);
    syscalls.monotonic_ += std::chrono::seconds(5);
  }
  // One more OOM kill in the job's cgroup (so in the host's count too): the
  // cgroup's counter and the host's move together, each counting it once.
  Sample next = step.sample;
  next.time += std::chrono::seconds(5);
  next.monotonic += std::chrono::seconds(5);
  ASSERT_TRUE(next.cgroup && next.system_oom_kills);
  next.cgroup->oom_kills += 1;
  *next.system_oom_kills += 1;
  step = watcher.feed(next);

  auto snapshot = std::make_shared<Snapshot>();
  snapshot->step = step;
  snapshot->active = watcher.engine().active();
  snapshot->samples_total = 7;
  snapshot->sample_duration_seconds = 0.002;
  snapshot->sinks = {{"webhook#1", "https://hooks.example", 3, 1, 0}};
  snapshot->taken = std::chrono::steady_clock::now();
  snapshot->last_complete = snapshot->taken;
  SnapshotCollector collector;
  collector.publish(snapshot);
  // The page as a scrape sends it.
  const std::string actual = zero_timings(collector.text(snapshot->taken));

  // On a difference: if intended, regenerate (see the top of this file).
  testing::expect_golden("metrics.prom", actual);
}

}  // namespace
}  // namespace headroom::daemon
