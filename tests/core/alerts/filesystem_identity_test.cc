// Issue 21, items 1, 3 and 7: a hung mount, a disk unmounted under a watched
// path, a path that must be a mount point, and alerts that say what to do.
#include <gtest/gtest.h>

#include "core/alerts/rules.h"

namespace headroom {
namespace {

FilesystemSample on(const std::string& mountpoint, const std::string& device, std::uint64_t avail) {
  FilesystemSample filesystem;
  filesystem.path = "/data/ckpt";
  filesystem.mountpoint = mountpoint;
  filesystem.fstype = "ext4";
  filesystem.device = device;
  filesystem.source = device == "8:16" ? "/dev/sdb1" : "/dev/sda1";
  filesystem.ok = true;
  filesystem.total_bytes = 1000;
  filesystem.free_bytes = avail;
  filesystem.avail_bytes = avail;
  return filesystem;
}

Sample sample_at(int t, FilesystemSample filesystem) {
  Sample sample;
  sample.monotonic = std::chrono::steady_clock::time_point(std::chrono::seconds(t));
  sample.time = std::chrono::system_clock::time_point(std::chrono::seconds(t));
  sample.filesystems.push_back(std::move(filesystem));
  return sample;
}

std::vector<AlertEvent> of(const std::vector<AlertEvent>& events, const std::string& rule) {
  std::vector<AlertEvent> found;
  for (const AlertEvent& event : events) {
    if (event.rule == rule) found.push_back(event);
  }
  return found;
}

TEST(AlertEngine, AnUnmountedDiskUnderAWatchedPathFires) {
  AlertEngine engine;
  const Predictions none;
  EXPECT_TRUE(
      of(engine.evaluate(sample_at(0, on("/data", "8:16", 500)), none), "filesystem_changed")
          .empty());
  // umount /data; mkdir /data/ckpt: the same path, now on the root disk.
  const auto events =
      of(engine.evaluate(sample_at(5, on("/", "8:1", 900)), none), "filesystem_changed");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, AlertKind::kFiring);
  EXPECT_EQ(events[0].summary,
            "/data/ckpt is now on / (ext4 /dev/sda1), not on /data (ext4 /dev/sdb1) as when "
            "watch started: unmounted?");
  EXPECT_NE(events[0].action.find("findmnt -T /data/ckpt"), std::string::npos);
  // Mounted back: resolved after clear_samples samples.
  std::vector<AlertEvent> resolved;
  for (int t = 10; t <= 20; t += 5) {
    for (const AlertEvent& event :
         of(engine.evaluate(sample_at(t, on("/data", "8:16", 500)), none), "filesystem_changed")) {
      resolved.push_back(event);
    }
  }
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].kind, AlertKind::kResolved);
}

TEST(AlertEngine, APathConfiguredAsAMountThatIsNotOneIsCritical) {
  AlertEngine engine;
  FilesystemSample mounted = on("/data", "8:16", 500);
  mounted.path = "/data";
  mounted.expect_mount = true;
  mounted.is_mount = true;
  EXPECT_TRUE(of(engine.evaluate(sample_at(0, mounted), {}), "mount_missing").empty());
  // Started after the umount: no earlier filesystem to compare with, but the config says.
  AlertEngine fresh;
  FilesystemSample bare = on("/", "8:1", 900);
  bare.path = "/data";
  bare.expect_mount = true;
  bare.is_mount = false;
  const auto events = of(fresh.evaluate(sample_at(0, bare), {}), "mount_missing");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].severity, Severity::kCritical);
  EXPECT_EQ(events[0].summary,
            "/data is not a mount point: writes go to / (ext4 /dev/sda1), 900 B free");
}

TEST(AlertEngine, AHungMountIsStuckNotMissingAndItsAlertsHold) {
  AlertConfig config;
  config.clear_samples = 1;
  AlertEngine engine(config);
  // 97% full: usage alerts fire.
  const auto full = engine.evaluate(sample_at(0, on("/data", "8:16", 30)), {});
  EXPECT_EQ(of(full, "filesystem_usage").size(), 2u);
  FilesystemSample hung;
  hung.path = "/data/ckpt";
  hung.mountpoint = "/data";
  hung.stuck = true;
  hung.error = Error{Error::Code::kIo, "statfs of /data has not answered for 2s"};
  const auto events = engine.evaluate(sample_at(5, hung), {});
  const auto stuck = of(events, "filesystem_stuck");
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].kind, AlertKind::kFiring);
  EXPECT_EQ(stuck[0].subject, "/data");
  EXPECT_TRUE(of(events, "path_missing").empty());
  // Its usage is unknown, not fine: the usage alerts are not resolved.
  EXPECT_TRUE(of(events, "filesystem_usage").empty());
  EXPECT_EQ(engine.active().size(), 3u);
}

TEST(AlertFingerprint, IsStableAndTellsAlertsApart) {
  const std::string id = alert_fingerprint("gpu-07", "filesystem_usage", "/data", Severity::kWarn);
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id, alert_fingerprint("gpu-07", "filesystem_usage", "/data", Severity::kWarn));
  EXPECT_NE(id, alert_fingerprint("gpu-08", "filesystem_usage", "/data", Severity::kWarn));
  EXPECT_NE(id, alert_fingerprint("gpu-07", "filesystem_usage", "/data", Severity::kCritical));
  EXPECT_NE(alert_fingerprint("a", "bc", "d", Severity::kWarn),
            alert_fingerprint("ab", "c", "d", Severity::kWarn));
}

TEST(AlertEngine, AnOomKillNamesItsVictimAndCountsInWholeNumbers) {
  AlertEngine engine;  // oom_scope cgroup; no cgroup in the sample: the host's kills
  Sample before = sample_at(0, on("/data", "8:16", 500));
  before.system_oom_kills = 6;
  (void)engine.evaluate(before, {});
  Sample after = sample_at(5, on("/data", "8:16", 500));
  after.system_oom_kills = 8;
  after.oom_victims = {{4241, "python3", "/job.slice/a", 100u << 20},
                       {4242, "pt_data_worker", "/job.slice/b", 650u << 20}};
  const auto events = of(engine.evaluate(after, {}), "oom_kill");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].summary,
            "OOM kill: pt_data_worker (pid 4242) in memory cgroup /job.slice/b, rss 650.0 MiB; "
            "2 new on this host, 8 since boot");
  EXPECT_EQ(events[0].labels.at("pid"), "4242");
  EXPECT_EQ(events[0].labels.at("cgroup"), "/job.slice/b");
  EXPECT_NE(events[0].action.find("dmesg"), std::string::npos);
}

}  // namespace
}  // namespace headroom
