// Flags set the keys of the watch config by the file's own rules: the same parsing, the
// same checks, errors naming the flag (daemon::load_config).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/config.h"

namespace headroom::daemon {
namespace {

Result<DaemonConfig> with_flags(const std::vector<FlagValues>& flags,
                                const std::optional<std::filesystem::path>& file = {}) {
  return load_config(file, flags, /*host_root=*/false);
}

std::string error_of(const std::vector<FlagValues>& flags) {
  auto config = with_flags(flags);
  return config ? std::string() : config.error().message;
}

TEST(ConfigFlags, EachFlagSetsItsKeyAndIsNamedAsItsOrigin) {
  auto config = with_flags({{"--interval", {"250ms"}},
                            {"--warn-percent", {"70.5"}},
                            {"--keep", {"3"}},
                            {"--ckpt-size", {"2GiB"}},
                            {"--repeat", {"90s"}},
                            {"--dir", {"/a", "/b"}},
                            {"--host", {"123"}},  // a name that looks like a number stays a name
                            {"--no-stderr", {}},
                            {"--no-shm-stale", {}},
                            {"--webhook", {"http://a/x", "http://b/y"}},
                            {"--webhook-retries", {"0"}},
                            {"--listen", {""}}});
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->interval, std::chrono::milliseconds(250));
  EXPECT_EQ(config->watch.alerts.warn_percent, 70.5);
  EXPECT_EQ(config->watch.alerts.keep, 3U);
  EXPECT_EQ(config->watch.alerts.checkpoint_bytes, std::uint64_t{2} << 30);
  EXPECT_EQ(config->watch.alerts.repeat_interval, std::chrono::seconds(90));
  EXPECT_EQ(config->watch.sample.dirs, (std::vector<std::filesystem::path>{"/a", "/b"}));
  EXPECT_EQ(config->host, "123");
  EXPECT_FALSE(config->stderr_alerts);
  EXPECT_FALSE(config->watch.sample.shm_stale);
  ASSERT_EQ(config->sinks.size(), 2U);
  EXPECT_EQ(config->sinks[1].origin.flag, "--webhook");
  EXPECT_EQ(config->delivery.retries, 0);
  EXPECT_EQ(config->listen, std::optional<std::string>(kDefaultListen));
  EXPECT_EQ(config->origins.at("alerts.warn_percent").flag, "--warn-percent");
  EXPECT_EQ(config->origins.at("interval").flag, "--interval");
}

TEST(ConfigFlags, AFlagBreaksTheSameRuleAsTheFileWithTheFlagNamed) {
  const std::pair<std::vector<FlagValues>, const char*> cases[] = {
      {{{"--keep", {"0"}}}, "--keep 0 must be at least 1"},
      {{{"--queue", {"0"}}}, "--queue 0 must be at least 1"},
      {{{"--warn-percent", {"85%"}}}, "Could not convert: --warn-percent = 85%"},
      {{{"--warn-percent", {"120"}}}, "--warn-percent: must be between 0 and 100"},
      {{{"--warn-percent", {"0"}}}, "--warn-percent 0 must be above 0 and at most 100"},
      {{{"--critical-percent", {"80"}}},
       "--critical-percent 80 is below warn_percent 85 (default)"},
      {{{"--interval", {"soon"}}}, "--interval: invalid duration 'soon': expected a number"},
      {{{"--interval", {"10ms"}}}, "--interval 10ms is below the minimum 50ms"},
      {{{"--signal", {"USR1"}}}, "--signal: 'USR1' is not SIGNAL:PID (e.g. USR1:1234)"},
      {{{"--webhook", {"http://a/x", "http://a/x"}}},
       "--webhook 'http://a' is already a sink (--webhook)"},
  };
  for (const auto& [flags, expected] : cases) EXPECT_EQ(error_of(flags), expected);
}

TEST(ConfigFlags, FlagsOverTheFileAndMendIt) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "config_flags";
  std::filesystem::create_directories(dir);
  const auto file = dir / "watch.toml";
  std::ofstream(file) << "interval = \"1s\"\n[alerts]\ncritical_percent = 80\n";
  // The file alone breaks the rule (critical below the default warn) ...
  auto config = with_flags({}, file);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message,
            file.string() + ":3: critical_percent 80 is below warn_percent 85 (default)");
  // ... a flag mends it, and the file's other keys stay.
  config = with_flags({{"--warn-percent", {"75"}}}, file);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->interval, std::chrono::seconds(1));
  EXPECT_EQ(config->watch.alerts.critical_percent, 80);
  // A flag the config has no key for is not load_config's.
  EXPECT_TRUE(with_flags({{"--once", {}}, {"--warn-percent", {"75"}}}, file));
}

TEST(ConfigFlags, UnderAHostRootOomKillsAreFollowedHostWideUnlessSet) {
  auto config = load_config(std::nullopt, {}, /*host_root=*/true);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->watch.alerts.oom_scope, OomScope::kSystem);
  config = load_config(std::nullopt, {{"--oom-scope", {"cgroup"}}}, /*host_root=*/true);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->watch.alerts.oom_scope, OomScope::kCgroup);
}

}  // namespace
}  // namespace headroom::daemon
