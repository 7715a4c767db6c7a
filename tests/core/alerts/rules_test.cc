#include "core/alerts/rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/alerts/watcher.h"

namespace headroom {
namespace {

using std::chrono::seconds;

constexpr std::uint64_t kTotal = 100'000;

/// A synthetic sample: one watched dir at time t with `avail` bytes left.
Sample at(double t, std::uint64_t avail) {
  Sample sample;
  const auto offset = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(t));
  sample.monotonic = std::chrono::steady_clock::time_point(offset);
  sample.time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(offset));
  FilesystemSample filesystem;
  filesystem.path = "/ckpt";
  filesystem.mountpoint = "/ckpt";
  filesystem.fstype = "tmpfs";
  filesystem.device = "0:50";
  filesystem.ok = true;
  filesystem.total_bytes = kTotal;
  filesystem.free_bytes = avail;  // a tmpfs: nothing reserved for root
  filesystem.avail_bytes = avail;
  sample.filesystems.push_back(filesystem);
  return sample;
}

struct Counts {
  int firing = 0;
  int repeat = 0;
  int resolved = 0;
};

/// Feeds samples t = 0, step, 2*step, ... (avail from `series`) and counts the
/// events of one rule (and severity).
Counts run(const std::function<std::uint64_t(int)>& series, int count, const std::string& rule,
           AlertConfig config = {}, double step = 1.0, Severity severity = Severity::kCritical) {
  WatchOptions options;
  options.window = std::chrono::milliseconds(static_cast<int>(20 * step * 1000));
  options.alerts = config;
  Watcher watcher(Context{SysRoot("/"), nullptr, {}, "/", "self"}, options);
  Counts counts;
  for (int i = 0; i < count; ++i) {
    for (const AlertEvent& event : watcher.feed(at(i * step, series(i))).events) {
      if (event.rule != rule || event.severity != severity) continue;
      if (event.kind == AlertKind::kFiring) ++counts.firing;
      if (event.kind == AlertKind::kRepeat) ++counts.repeat;
      if (event.kind == AlertKind::kResolved) ++counts.resolved;
    }
  }
  return counts;
}

AlertConfig horizon(int seconds_) {
  AlertConfig config;
  config.eta_horizon = seconds(seconds_);
  config.repeat_interval = seconds(0);
  return config;
}

struct EtaCase {
  const char* name;
  std::function<std::uint64_t(int)> series;
  int count;
  Counts expected;
};

TEST(AlertEngine, FillEtaTable) {
  const EtaCase cases[] = {
      {"steady fill then freed",
       [](int i) -> std::uint64_t { return i < 40 ? kTotal - 2000 * std::uint64_t(i) : kTotal; },
       80,
       {1, 0, 1}},
      {"flat never fires", [](int) -> std::uint64_t { return 50'000; }, 60, {0, 0, 0}},
      {"slow fill beyond horizon never fires",
       [](int i) -> std::uint64_t { return kTotal - std::uint64_t(i); },
       60,
       {0, 0, 0}},
      {"bursty writes fire once and do not flap",
       [](int i) -> std::uint64_t { return kTotal - 8000 * std::uint64_t(i / 4); },
       40,
       {1, 0, 0}},
      {"bursty writes then freed resolve once",
       [](int i) -> std::uint64_t {
         return i < 40 ? kTotal - 8000 * std::uint64_t(i / 4) % kTotal : kTotal;
       },
       90,
       {1, 0, 1}},
  };
  for (const EtaCase& test : cases) {
    const Counts counts = run(test.series, test.count, "filesystem_fill_eta", horizon(300));
    EXPECT_EQ(counts.firing, test.expected.firing) << test.name;
    EXPECT_EQ(counts.repeat, test.expected.repeat) << test.name;
    EXPECT_EQ(counts.resolved, test.expected.resolved) << test.name;
  }
}

TEST(AlertEngine, UsageHysteresisDoesNotFlapAroundTheThreshold) {
  // Used oscillates 84% <-> 86% around the 85% warn threshold: fires once, never resolves
  // (clearing needs < 83%), then resolves once after dropping to 50%.
  const auto series = [](int i) -> std::uint64_t {
    if (i >= 30) return 50'000;
    return i % 2 == 0 ? 14'000 : 16'000;
  };
  const Counts counts = run(series, 40, "filesystem_usage", horizon(1), 1.0, Severity::kWarn);
  EXPECT_EQ(counts.firing, 1);
  EXPECT_EQ(counts.resolved, 1);
  const Counts critical = run(series, 40, "filesystem_usage", horizon(1), 1.0, Severity::kCritical);
  EXPECT_EQ(critical.firing, 0);
}

TEST(AlertEngine, RepeatsAtTheConfiguredInterval) {
  AlertConfig config;
  config.repeat_interval = seconds(10);
  const Counts counts = run([](int) -> std::uint64_t { return 1000; }, 35, "filesystem_usage",
                            config, 1.0, Severity::kCritical);
  EXPECT_EQ(counts.firing, 1);
  EXPECT_EQ(counts.repeat, 3);  // t = 10, 20, 30
  EXPECT_EQ(counts.resolved, 0);
}

TEST(AlertEngine, OomKillsFireRepeatOnNewKillsAndResolveWhenQuiet) {
  AlertConfig config;
  config.oom_quiet = seconds(5);
  AlertEngine engine(config);
  std::vector<AlertEvent> events;
  const std::uint64_t kills[] = {2, 2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4};
  for (int i = 0; i < 14; ++i) {
    Sample sample = at(i, kTotal);
    sample.cgroup = CgroupSample{"/job", std::nullopt, 0, kills[i]};
    for (AlertEvent& event : engine.evaluate(sample, {})) {
      if (event.rule == "oom_kill") events.push_back(event);
    }
  }
  ASSERT_EQ(events.size(), 3u);  // 2 -> 3 fires; 3 -> 4 repeats; quiet from t=4: resolved
  EXPECT_EQ(events[0].kind, AlertKind::kFiring);
  EXPECT_EQ(events[0].subject, "/job");
  EXPECT_EQ(events[1].kind, AlertKind::kRepeat);
  EXPECT_EQ(events[2].kind, AlertKind::kResolved);
}

/// The subjects of the oom_kill events when, after a first sample, the host counts one more
/// kill and the examined cgroup (`path`, `limit`) does not: whose kills the rule follows.
std::vector<std::string> oom_subjects(OomScope scope, const std::string& path,
                                      std::optional<std::uint64_t> limit) {
  AlertConfig config;
  config.oom_scope = scope;
  AlertEngine engine(config);
  std::vector<std::string> subjects;
  for (int i = 0; i < 3; ++i) {
    Sample sample = at(i, kTotal);
    sample.cgroup = CgroupSample{path, limit, 0, 0};
    sample.system_oom_kills = i == 0 ? 7 : 8;
    for (const AlertEvent& event : engine.evaluate(sample, {})) {
      if (event.rule == "oom_kill") subjects.push_back(event.subject + ": " + event.summary);
    }
  }
  return subjects;
}

TEST(AlertEngine, OomScopeDecidesWhoseKillsAlert) {
  const std::vector<std::string> host = {"system: 1 new OOM kill(s) on this host (8 since boot)"};
  // A watcher run as a systemd service (a limit of its own) or in a cgroup without a limit
  // follows the host; in a limited job or container cgroup, that cgroup.
  EXPECT_EQ(oom_subjects(OomScope::kAuto, "/system.slice/headroom-watch.service", 128 << 20), host);
  EXPECT_EQ(oom_subjects(OomScope::kAuto, "/user.slice/user-0.slice/session-3.scope", {}), host);
  EXPECT_TRUE(oom_subjects(OomScope::kAuto, "/docker/0123abcd", 8ULL << 30).empty());
  EXPECT_TRUE(oom_subjects(OomScope::kCgroup, "/user.slice", {}).empty());
  EXPECT_EQ(oom_subjects(OomScope::kSystem, "/docker/0123abcd", 8ULL << 30), host);
  EXPECT_EQ(*parse_oom_scope("system"), OomScope::kSystem);
  EXPECT_EQ(parse_oom_scope("host").error().message,
            "oom_scope \"host\" is not one of \"auto\", \"cgroup\", \"system\"");
}

TEST(AlertEngine, PsiMustHoldForTheDuration) {
  AlertConfig config;
  config.psi_full_threshold = 10;
  config.psi_for = seconds(5);
  AlertEngine engine(config);
  std::vector<std::pair<int, AlertKind>> events;
  for (int i = 0; i < 30; ++i) {
    Sample sample = at(i, kTotal);
    // A 3 s spike (too short), then 10 s of stall, then calm.
    const bool stalled = (i >= 2 && i < 5) || (i >= 10 && i < 20);
    sample.pressure = PressureSample{stalled ? 50.0 : 1.0, stalled ? 30.0 : 0.0, 0};
    for (const AlertEvent& event : engine.evaluate(sample, {})) {
      if (event.rule == "memory_psi") events.emplace_back(i, event.kind);
    }
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], std::make_pair(15, AlertKind::kFiring));
  EXPECT_EQ(events[1], std::make_pair(22, AlertKind::kResolved));  // 3 clear samples: 20, 21, 22
}

TEST(AlertEngine, CheckpointThatWillNotFit) {
  AlertConfig config;
  config.checkpoint_bytes = 10'000;
  config.keep = 3;
  config.repeat_interval = seconds(0);
  const auto series = [](int i) -> std::uint64_t { return i < 10 ? 25'000 : 8'000; };
  EXPECT_EQ(run(series, 20, "checkpoint_space", config, 1.0, Severity::kCritical).firing, 1);
  EXPECT_EQ(run(series, 20, "checkpoint_space", config, 1.0, Severity::kWarn).firing, 1);
  EXPECT_EQ(run([](int) -> std::uint64_t { return 50'000; }, 20, "checkpoint_space", config, 1.0,
                Severity::kCritical)
                .firing,
            0);
}

TEST(AlertEngine, AFilesystemAlertNamesTheWatchedDirOnIt) {
  // --dir /mnt/ckpt on a tmpfs mounted at /mnt: one alert per filesystem, keyed by the
  // mount point, but the words say which watched dir it concerns.
  AlertEngine engine;
  Sample sample = at(0, 1000);
  sample.filesystems[0].path = "/mnt/ckpt";
  sample.filesystems[0].mountpoint = "/mnt";
  const std::vector<AlertEvent> events = engine.evaluate(sample, {});
  const auto usage = std::find_if(events.begin(), events.end(), [](const AlertEvent& event) {
    return event.rule == "filesystem_usage" && event.severity == Severity::kCritical;
  });
  ASSERT_NE(usage, events.end());
  EXPECT_EQ(usage->subject, "/mnt");
  EXPECT_EQ(usage->summary, "/mnt (holding /mnt/ckpt) is 99.0% full (1000 B free of 97.7 KiB)");
}

TEST(AlertEngine, MissingPathIsReportedAndResolvesWhenBack) {
  AlertEngine engine;
  std::vector<AlertKind> kinds;
  for (int i = 0; i < 10; ++i) {
    Sample sample = at(i, kTotal);
    if (i >= 2 && i < 5) {
      sample.filesystems[0].ok = false;
      sample.filesystems[0].error = "/ckpt: No such file or directory";
    }
    for (const AlertEvent& event : engine.evaluate(sample, {})) {
      if (event.rule == "path_missing") kinds.push_back(event.kind);
    }
  }
  EXPECT_EQ(kinds, (std::vector<AlertKind>{AlertKind::kFiring, AlertKind::kResolved}));
}

TEST(ValidateAlertConfig, RejectsOutOfOrderThresholds) {
  AlertConfig config;
  config.warn_percent = 96;
  EXPECT_FALSE(validate(config));
  config = {};
  config.keep = 0;
  EXPECT_FALSE(validate(config));
  EXPECT_TRUE(validate(AlertConfig{}));
}

}  // namespace
}  // namespace headroom
