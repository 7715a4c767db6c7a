#include "daemon/config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/alerts/render.h"
#include "core/signal_names.h"
#include "daemon/metrics.h"
#include "daemon/sinks.h"

namespace headroom::daemon {
namespace {

TEST(ApplyToml, ReadsEveryTable) {
  DaemonConfig config;
  const auto applied = apply_toml(R"(
interval = "200ms"
window = "5m"
dirs = ["/ckpt", "/logs"]
listen = "127.0.0.1:9999"
host = "gpu-07"
[alerts]
warn_percent = 80
eta_horizon = "30m"
eta_min_span = "90s"
memory_eta_below_percent = 30
ckpt_size = "20GiB"
keep = 2
oom_scope = "system"
[sinks]
stderr = false
webhook = "http://127.0.0.1:1/hook"
signal = ["USR1:42"]
[delivery]
timeout = "1s"
retries = 1
queue = 8
)",
                                  "watch.toml", config);
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_EQ(config.interval, std::chrono::milliseconds(200));
  EXPECT_EQ(config.watch.window, std::chrono::minutes(5));
  EXPECT_EQ(config.watch.sample.dirs.size(), 2u);
  EXPECT_EQ(config.listen, "127.0.0.1:9999");
  EXPECT_EQ(config.host, "gpu-07");
  EXPECT_EQ(config.watch.alerts.warn_percent, 80);
  EXPECT_EQ(config.watch.alerts.eta_horizon, std::chrono::minutes(30));
  EXPECT_EQ(config.watch.alerts.eta_min_span, std::chrono::seconds(90));
  EXPECT_EQ(config.watch.alerts.memory_eta_below_percent, 30.0);
  EXPECT_EQ(config.watch.alerts.checkpoint_bytes, 20ull << 30);
  EXPECT_EQ(config.watch.alerts.oom_scope, OomScope::kSystem);
  EXPECT_EQ(DaemonConfig().watch.alerts.oom_scope, OomScope::kAuto);
  EXPECT_FALSE(config.stderr_alerts);
  ASSERT_EQ(config.sinks.size(), 2u);
  // toml++ keeps keys sorted: the order of kinds is not the file's.
  EXPECT_EQ(config.sinks[0].kind, SinkKind::kSignal);
  EXPECT_EQ(config.sinks[0].target, "USR1:42");
  EXPECT_EQ(config.sinks[1].kind, SinkKind::kWebhook);
  EXPECT_EQ(config.delivery.queue_capacity, 8u);
}

struct BadCase {
  const char* text;
  const char* message;  ///< a part of the error
};

TEST(ApplyToml, RejectsWithLineAndReasonAndKeepsTheConfig) {
  const BadCase cases[] = {
      {"interval = \"5s\"\nbogus = 1\n", "watch.toml:2: bogus: unknown key"},
      {"[alerts]\nwarn_percent = \"high\"\n", "watch.toml:2: warn_percent: expected a number"},
      {"interval = \"5 parsecs\"\n", "watch.toml:1: interval"},
      {"[sinks]\nsignal = \"USR1\"\n", "watch.toml:2: signal"},
      {"[sinks]\nsignal = \"USR1:0\"\n", "watch.toml:2: signal: 'USR1:0': '0' is not a process id"},
      {"[sinks]\nsignal = \"USR1:99999999999\"\n", "'99999999999' is not a process id"},
      {"[sinks]\nsignal = \"NOPE:12\"\n", "watch.toml:2: signal: unknown signal 'NOPE'"},
      {"[alerts]\n\nwarn_percent = 150\n", "watch.toml:3: warn_percent: must be between 0 and 100"},
      {"[sinks]\nwebhook = \"ftp://x\"\n", "not an http(s) URL"},
      {"interval = \n", "watch.toml:1"},
      {"[alerts]\nwarn_percent = 99\n", "critical_percent"},
      {"[alerts]\noom_scope = \"node\"\n",
       "watch.toml:2: oom_scope: oom_scope \"node\" is not one of \"auto\", \"cgroup\", "
       "\"system\""},
      {"listen = \"999.1.1.1:9840\"\n",
       "watch.toml:1: listen '999.1.1.1:9840' has no IPv4 address"},
  };
  for (const BadCase& test : cases) {
    DaemonConfig config;
    config.interval = std::chrono::milliseconds(1234);
    const auto applied = apply_toml(test.text, "watch.toml", config);
    ASSERT_FALSE(applied) << test.text;
    EXPECT_NE(applied.error().message.find(test.message), std::string::npos)
        << applied.error().message;
    EXPECT_EQ(config.interval, std::chrono::milliseconds(1234)) << "config changed on error";
  }
}

TEST(ParseListenAddress, NormalizesWhatTheServerTakesAndRejectsTheRest) {
  EXPECT_EQ(*parse_listen_address("127.0.0.1:9840"), "127.0.0.1:9840");
  EXPECT_EQ(*parse_listen_address("0.0.0.0:9840"), "0.0.0.0:9840");
  // A bare port is loopback, like the default; all interfaces must be asked for.
  EXPECT_EQ(*parse_listen_address("9840"), "127.0.0.1:9840");
  EXPECT_EQ(*parse_listen_address(":9840"), "127.0.0.1:9840");
  EXPECT_EQ(*parse_listen_address("localhost:0"), "127.0.0.1:0");
  EXPECT_EQ(*parse_listen_address("[::1]:9840"), "[::1]:9840");
  EXPECT_EQ(*parse_listen_address("[::]:0"), "[::]:0");
  EXPECT_EQ(*parse_listen_address("[0:0::1]:9840"), "[::1]:9840");
  const std::pair<const char*, const char*> bad[] = {
      {"999.1.1.1:80", "has no IPv4 address"},  // inet_aton-style parsers bind 231.1.1.1
      {"1.2.3:80", "has no IPv4 address"},
      {"example.com:80", "host names are not resolved"},
      {"::1:9840", "IPv6 address without brackets"},
      {"[::1]9840", "IPv6 address without brackets"},
      {"[::g]:9840", "has no IPv6 address"},
      {"[]:9840", "IPv6 address without brackets"},
      {"127.0.0.1:65536", "has no port 0-65535"},
      {"127.0.0.1:", "has no port"},
      {"127.0.0.1:80x", "has no port"},
      {"", "has no port"},
  };
  for (const auto& [address, message] : bad) {
    const auto parsed = parse_listen_address(address);
    ASSERT_FALSE(parsed) << address;
    EXPECT_NE(parsed.error().message.find(message), std::string::npos) << parsed.error().message;
  }
}

TEST(ParseSignal, NamesAndNumbers) {
  EXPECT_EQ(*parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(*parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(*parse_signal("9"), 9);
  EXPECT_FALSE(parse_signal("BOGUS"));
}

TEST(AlertLine, NamesKindSeverityRuleSubject) {
  AlertEvent event;
  event.kind = AlertKind::kResolved;
  event.rule = "filesystem_fill_eta";
  event.subject = "/ckpt";
  event.severity = Severity::kCritical;
  event.summary = "/ckpt is not filling up";
  EXPECT_EQ(alert_line(event),
            "headroom: RESOLVED critical filesystem_fill_eta /ckpt: /ckpt is not filling up");
  // Read in a chat channel of a fleet, the line says which machine.
  event.host = "gpu-07";
  EXPECT_EQ(alert_line(event),
            "headroom on gpu-07: RESOLVED critical filesystem_fill_eta /ckpt: /ckpt is not "
            "filling up");
  EXPECT_EQ(to_json(event)["host"], "gpu-07");
  const std::vector<std::string> environment = alert_environment(event);
  EXPECT_NE(std::find(environment.begin(), environment.end(), "HEADROOM_ALERT_HOST=gpu-07"),
            environment.end());
  event.host.clear();
  EXPECT_FALSE(to_json(event).contains("host"));
}

TEST(MetricFamilies, ShmHasItsOwnFamilyAndEtaOnlyWhenFilling) {
  Snapshot snapshot;
  FilesystemSample shm;
  shm.path = "/dev/shm";
  shm.mountpoint = "/dev/shm";
  shm.fstype = "tmpfs";
  shm.role = FsRole::kShm;
  shm.ok = true;
  shm.total_bytes = 100;
  shm.free_bytes = 40;
  shm.avail_bytes = 40;
  snapshot.step.sample.filesystems.push_back(shm);
  FillEstimate estimate;
  estimate.rate = -2;
  estimate.eta_seconds = 20;
  snapshot.step.predictions.filesystems["/dev/shm"] = estimate;
  std::map<std::string, double> values;
  for (const auto& family : to_metric_families(snapshot)) {
    for (const auto& metric : family.metric) values[family.name] = metric.gauge.value;
  }
  EXPECT_EQ(values["headroom_shm_avail_bytes"], 40);
  EXPECT_EQ(values["headroom_filesystem_avail_bytes"], 40);
  EXPECT_EQ(values["headroom_filesystem_fill_eta_seconds"], 20);
  EXPECT_EQ(values["headroom_shm_fill_eta_seconds"], 20);
  EXPECT_EQ(values["headroom_filesystem_fill_rate_bytes_per_second"], 2);
  snapshot.step.predictions.filesystems.clear();
  for (const auto& family : to_metric_families(snapshot)) {
    EXPECT_NE(family.name, "headroom_filesystem_fill_eta_seconds");
  }
}

TEST(MetricFamilies, SystemFileHandlesAndProcessFdsHaveTheirOwnNames) {
  const auto families = [](FdSample fds) {
    Snapshot snapshot;
    snapshot.step.sample.fds = fds;
    std::map<std::string, double> values;
    for (const auto& family : to_metric_families(snapshot)) {
      for (const auto& metric : family.metric) values[family.name] = metric.gauge.value;
    }
    return values;
  };
  auto system = families(FdSample{2016, 1000000, true});
  EXPECT_EQ(system["headroom_file_handles_allocated"], 2016);
  EXPECT_EQ(system["headroom_file_handles_max"], 1000000);
  EXPECT_EQ(system.count("headroom_fds_open"), 0U);
  auto process = families(FdSample{12, 1024, false});
  EXPECT_EQ(process["headroom_fds_open"], 12);
  EXPECT_EQ(process["headroom_fds_limit"], 1024);
  EXPECT_EQ(process.count("headroom_file_handles_allocated"), 0U);
}

TEST(DaemonConfig, TheDaemonWatchesTheSystemsFileHandlesNotItsOwnFds) {
  EXPECT_FALSE(DaemonConfig{}.watch.sample.process_fds);
  EXPECT_TRUE(WatchOptions{}.sample.process_fds);
}

}  // namespace
}  // namespace headroom::daemon
