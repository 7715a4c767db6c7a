// Every error a watch config can produce points at the line (or flag) to change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/config.h"

namespace headroom::daemon {
namespace {

/// The error of applying `text` as watch.toml (and validating it), or "" when it is accepted.
std::string error_of(std::string_view text) {
  DaemonConfig config;
  auto applied = apply_toml(text, "watch.toml", config);
  return applied ? std::string() : applied.error().message;
}

TEST(ConfigErrors, CrossFieldErrorsNameTheLaterLineAndTheOther) {
  const std::pair<const char*, const char*> cases[] = {
      {"interval = \"1s\"\n[alerts]\nwarn_percent = 85\ncritical_percent = 80\n",
       "watch.toml:4: critical_percent 80 is below warn_percent 85 (line 3)"},
      {"[alerts]\ncritical_percent = 80\nwarn_percent = 85.5\n",
       "watch.toml:3: warn_percent 85.5 is above critical_percent 80 (line 2)"},
      {"[alerts]\n\nwarn_percent = 99\n",
       "watch.toml:3: warn_percent 99 is above critical_percent 95 (default)"},
      {"interval = \"800ms\"\nwindow = \"1s\"\n",
       "watch.toml:2: window 1s is less than twice interval 800ms (line 1)"},
      {"window = \"1s\"\ninterval = \"800ms\"\n",
       "watch.toml:2: interval 800ms is more than half of window 1s (line 1)"},
      {"window = \"10m\"\n[alerts]\neta_min_span = \"15m\"\n",
       "watch.toml:3: eta_min_span 15m is longer than window 10m (line 1), so no fill-time alert "
       "could fire"},
      {"[alerts]\neta_min_span = \"15m\"\n",
       "watch.toml:2: eta_min_span 15m is longer than window 10m (default), so no fill-time "
       "alert could fire"},
      {"[alerts]\nclear_margin_percent = 90\n",
       "watch.toml:2: clear_margin_percent 90 is not below warn_percent 85 (default), so a usage "
       "alert could never resolve"},
      {"[sinks]\nwebhook = [\n  \"http://a/x\",\n  \"http://a/x\",\n]\n",
       "watch.toml:4: webhook 'http://a' is already a sink (line 3)"},
      {"[sinks]\nsignal = [\"USR1:42\",\n  \"SIGUSR1:42\"]\n",
       "watch.toml:3: signal 'SIGUSR1:42' is already a sink (line 2)"},
      {"interval = 0.01\n", "watch.toml:1: interval 10ms is below the minimum 50ms"},
      {"[alerts]\nwarn_percent = 0\n",
       "watch.toml:2: warn_percent 0 must be above 0 and at most 100"},
      {"[alerts]\neta_clear_factor = 0.5\n",
       "watch.toml:2: eta_clear_factor 0.5 must be at least 1"},
      {"[alerts]\nkeep = 0\n", "watch.toml:2: keep 0 must be at least 1"},
      {"[alerts]\nclear_samples = 0\n", "watch.toml:2: clear_samples 0 must be at least 1"},
      {"[alerts]\nckpt_size = 0\n", "watch.toml:2: ckpt_size 0 must be more than 0"},
      {"[alerts]\neta_horizon = 0\n", "watch.toml:2: eta_horizon 0s must be longer than 0"},
      {"[delivery]\nqueue = 0\n", "watch.toml:2: queue 0 must be at least 1"},
      {"[delivery]\ntimeout = \"0s\"\n", "watch.toml:2: timeout 0s must be longer than 0"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(error_of(text), message) << text;
}

TEST(ConfigErrors, UnknownKeysAndTypeErrorsAnywhereNameTheirLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"[sinks]\nwebhook = [\n  \"http://a\",\n  3,\n]\n",
       "watch.toml:4: webhook: expected a string"},
      {"[sinks]\nwebhook = [\n  \"http://a\",\n  \"ftp://b\",\n]\n",
       "watch.toml:4: webhook: 'ftp://b' is not an http(s) URL"},
      {"[sinks]\nwebhook = 3\n", "watch.toml:2: webhook: expected a string or a list of strings"},
      {"[sinks]\nstderr = \"yes\"\n", "watch.toml:2: stderr: expected true or false"},
      {"[sinks]\n\nteams = \"http://a\"\n", "watch.toml:3: teams: unknown sink in [sinks]"},
      {"interval = \"5s\"\n\n[[sink]]\nkind = \"webhook\"\n", "watch.toml:3: sink: unknown key"},
      {"[delivery]\n\nretry = 3\n", "watch.toml:3: retry: unknown key in [delivery]"},
      {"[alerts]\nwarn = 3\n", "watch.toml:2: warn: unknown key in [alerts]"},
      {"dirs = [\"/a\",\n  7]\n", "watch.toml:2: dirs: expected a string"},
      {"alerts = 3\n", "watch.toml:1: alerts: expected a table"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(error_of(text), message) << text;
}

TEST(ConfigErrors, EmptyOrNotTomlIsOneLine) {
  EXPECT_EQ(error_of(""), "watch.toml: the file is empty");
  EXPECT_EQ(error_of("\n \n\t\n"), "watch.toml: the file is empty");
  EXPECT_EQ(error_of("# all defaults\n"), "");  // said on purpose: not empty
  for (const char* text : {"{\"interval\": \"5s\"}\n", "interval: 5s\nwindow: 10m\n",
                           "\x7f"
                           "ELF\x02\x01\x01"}) {
    const std::string message = error_of(std::string_view(text));
    EXPECT_EQ(message.rfind("watch.toml:1: not valid TOML: ", 0), 0U) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

/// A file set `file_key`; a flag then set `flag_key`: the error blames the flag.
TEST(ConfigErrors, AFlagIsNamedWhenItsValueIsTheOneToChange) {
  std::string text = "interval = \"1s\"\n";
  for (int line = 2; line < 10; ++line) text += "# comment\n";
  text += "[alerts]\n";           // line 10
  text += "warn_percent = 85\n";  // line 11
  DaemonConfig config;
  ASSERT_TRUE(apply_toml(text, "watch.toml", config, Check::kLater));
  config.watch.alerts.critical_percent = 80;
  config.origins["alerts.critical_percent"] = Origin::of_flag("--critical-percent");
  auto valid = validate(config);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message,
            "--critical-percent 80 is below warn_percent 85 (watch.toml:11)");

  config.watch.alerts.critical_percent = 95;
  config.interval = std::chrono::minutes(6);
  config.origins["interval"] = Origin::of_flag("--interval");
  valid = validate(config);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message, "--interval 6m is more than half of window 10m (default)");
}

TEST(ConfigErrors, AFlagCanMendTheFileWhenCheckedLater) {
  DaemonConfig config;
  const std::string text = "[alerts]\ncritical_percent = 80\n";  // below the default warn 85
  EXPECT_FALSE(apply_toml(text, "watch.toml", config));
  ASSERT_TRUE(apply_toml(text, "watch.toml", config, Check::kLater));
  EXPECT_FALSE(validate(config));
  config.watch.alerts.warn_percent = 70;
  config.origins["alerts.warn_percent"] = Origin::of_flag("--warn-percent");
  EXPECT_TRUE(validate(config));
}

TEST(ConfigErrors, ASinkFlagRepeatingTheFileIsNamed) {
  DaemonConfig config;
  ASSERT_TRUE(apply_toml("[sinks]\nwebhook = \"http://a/x\"\n", "watch.toml", config));
  config.sinks.emplace_back(SinkKind::kWebhook, "http://a/x", Origin::of_flag("--webhook"));
  auto valid = validate(config);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message, "--webhook 'http://a' is already a sink (watch.toml:2)");
}

TEST(ConfigErrors, AFileThatCannotBeReadIsPathAndStrerror) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                                    ("headroom-config-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  DaemonConfig config;
  auto applied = apply_toml_file(dir, config);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().message, dir.string() + ": Is a directory");
  applied = apply_toml_file(dir / "missing.toml", config);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().message,
            (dir / "missing.toml").string() + ": No such file or directory");
  std::ofstream(dir / "file") << "interval = \"1s\"\n";
  applied = apply_toml_file(dir / "file" / "watch.toml", config);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().message, (dir / "file" / "watch.toml").string() + ": Not a directory");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace headroom::daemon
