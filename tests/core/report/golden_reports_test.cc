// A golden file per report a user reads: the text and the JSON of explain, run's
// post-mortem, du and watch, each beside the other (check's are report_test.cc, the
// Prometheus exposition metrics_golden_test.cc). A change of output shows as a reviewed
// diff of tests/golden/ (HEADROOM_UPDATE_GOLDEN=1 rewrites them).

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "core/alerts/render.h"
#include "core/alerts/watcher.h"
#include "core/du/render.h"
#include "core/explain/explain.h"
#include "core/explain/render.h"
#include "core/golden.h"
#include "core/postmortem/postmortem.h"
#include "core/postmortem/render.h"
#include "core/signatures/catalog.h"

namespace headroom {
namespace {

using testing::expect_golden;
constexpr TextStyle kPlain{false, false};
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::int64_t kNowNs = 1'700'000'000'000'000'000;
const Context kNoHost;  // explain --no-host; a watcher fed samples reads nothing

TEST(GoldenReports, Explain) {
  auto catalog = load_catalog({});
  ASSERT_TRUE(catalog) << catalog.error().message;
  const std::vector<std::string> inputs = {std::string(HEADROOM_TEST_DATA) +
                                           "/logs/host_oom/dataloader_sigkill_alone.log"};
  auto explained = explain_logs(kNoHost, *catalog, inputs, /*confirm_on_host=*/false, -1);
  ASSERT_TRUE(explained) << explained.error().message;
  // One input: its evidence names lines, not the file (whose path is this checkout's).
  const Diagnosis& diagnosis = explained->diagnosis;
  const Conclusion& conclusion = explained->conclusion;
  expect_golden("explain.txt",
                render_explain_text(diagnosis, conclusion.host, conclusion.remedy, kPlain));
  expect_golden("explain.json",
                explain_to_json(diagnosis, conclusion.host, conclusion.remedy).dump(2) + "\n");
}

TEST(GoldenReports, Postmortem) {
  SupervisionResult run;
  run.main_pid = 4242;
  run.wait_status = 1 << 8;  // the main process exited with status 1 ...
  run.exit_code = 1;
  run.exits.push_back({run.main_pid, run.wait_status, {}});
  run.exits.push_back({4243, SIGKILL, {}});  // ... after the kernel killed a worker
  PostmortemInput input;
  input.run = &run;
  input.cgroup_path = "/job";
  input.cgroup_limit_bytes = 1 * kGiB;
  input.cgroup_oom_kills_before = 0;
  input.cgroup_oom_kills_after = 1;
  input.kernel_log_covers_job = true;
  OomEvent kill;
  kill.pid = 4243;
  kill.comm = "pt_data_worker";
  kill.task_cgroup = "/job";
  kill.oom_cgroup = "/job";
  kill.constraint = OomConstraint::kMemoryCgroup;
  kill.anon_rss_bytes = std::uint64_t{900} << 20;
  input.oom_events.push_back(kill);
  input.could_not_see.push_back("the job's memory cgroup (no cgroup sample)");
  const Postmortem postmortem = build_postmortem(input);
  expect_golden("postmortem.txt", render_postmortem(postmortem, kPlain));
  expect_golden("postmortem.json",
                postmortem_to_json(postmortem, run, {"python3", "train.py"}).dump(2) + "\n");
}

TEST(GoldenReports, Du) {
  DuReport report;
  report.path = "/data/run7";
  report.total = {12 * kGiB, 12 * kGiB - 4096, 1234, 12, kNowNs - 90'000'000'000};
  DuEntry checkpoints;
  checkpoints.name = "checkpoints";
  checkpoints.kind = walk::FileKind::kDirectory;
  checkpoints.owner = "alice";
  checkpoints.owner_uid = 1000;
  checkpoints.tally = {10 * kGiB, 10 * kGiB, 4, 1, kNowNs - 90'000'000'000};
  checkpoints.held_files = 1;
  checkpoints.holders.push_back({4242, "alice", "python3", "fd"});
  DuEntry log;
  log.name = "train.log";
  log.owner = "alice";
  log.owner_uid = 1000;
  log.tally = {2 * kGiB, 2 * kGiB - 4096, 1, 0, kNowNs - 3'600'000'000'000};
  DuEntry scratch;
  scratch.name = "scratch";
  scratch.kind = walk::FileKind::kDirectory;
  scratch.mount_point = true;
  report.entries = {checkpoints, log, scratch};
  report.other_count = 1228;
  report.other = {4096, 4096, 1228, 10, kNowNs - 7 * 86'400'000'000'000};
  report.unreadable = 1;
  report.problems.push_back({"/data/run7/private", "Permission denied"});
  report.mounts_skipped = 1;
  report.skipped_mounts.push_back("/data/run7/scratch");
  report.threads = 2;
  report.now_ns = kNowNs;
  report.in_use_checked = true;
  expect_golden("du.txt", render_du_text(report, kPlain));
  expect_golden("du.json", du_to_json(report).dump(2) + "\n");
}

Sample watch_sample(int second) {
  Sample sample;
  sample.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 + second));
  sample.monotonic = std::chrono::steady_clock::time_point(std::chrono::seconds(second));
  FilesystemSample ckpt;
  ckpt.path = "/ckpt";
  ckpt.mountpoint = "/ckpt";
  ckpt.fstype = "ext4";
  ckpt.device = "8:1";
  ckpt.source = "/dev/sda1";
  ckpt.ok = true;
  ckpt.total_bytes = 100 * kGiB;
  // 10 GiB left at the start, 100 MiB written a second.
  ckpt.free_bytes = ckpt.avail_bytes =
      10 * kGiB - static_cast<std::uint64_t>(second) * (std::uint64_t{100} << 20);
  ckpt.total_inodes = 1'000'000;
  ckpt.avail_inodes = 900'000;
  FilesystemSample gone;
  gone.path = "/scratch/run7";
  gone.mountpoint = "/scratch/run7";
  gone.error = Error::from_errno(ENOENT, "/scratch/run7");
  sample.filesystems = {ckpt, gone};
  sample.memory = MemorySample{64 * kGiB, 20 * kGiB, 0, 0};
  sample.pressure = PressureSample{1.5, 0.25, 1000};
  sample.fds = FdSample{2048, 1'048'576, true};
  sample.shm_stale_bytes = 0;
  sample.probes.push_back({"filesystem", true, 0.001, std::nullopt});
  sample.probes.push_back(
      {"pressure", false, 0.0005, Error::from_errno(EACCES, "/proc/pressure/memory")});
  return sample;
}

TEST(GoldenReports, Watch) {
  WatchOptions options;
  options.window = std::chrono::seconds(40);
  Watcher watcher(kNoHost, options);
  WatchStep step;
  for (int second = 0; second <= 30; second += 5) step = watcher.feed(watch_sample(second));
  expect_golden("watch.txt", render_watch_text(step));
  expect_golden("watch.json", to_json(step).dump(2) + "\n");
}

}  // namespace
}  // namespace headroom
