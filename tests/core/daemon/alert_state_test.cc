#include "daemon/alert_state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace headroom::daemon {
namespace {

std::filesystem::path scratch_dir() {
  const auto dir = std::filesystem::path(HEADROOM_SOURCE_DIR) / "build" / "scratch" /
                   ("alert_state_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(AlertState, RoundTripsTheFiringAlerts) {
  const auto dir = scratch_dir();
  const auto path = dir / "alerts.json";
  ActiveAlert alert;
  alert.last.rule = "filesystem_usage";
  alert.last.subject = "/data";
  alert.last.severity = Severity::kCritical;
  alert.last.summary = "/data is 97.0% full";
  alert.last.value = 97;
  alert.last.threshold = 95;
  alert.last.time =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'250));
  alert.last.started = std::chrono::system_clock::time_point(std::chrono::seconds(1'699'999'000));
  alert.last.labels = {{"mountpoint", "/data"}, {"role", "dir"}};
  alert.last.action = "headroom du /data";
  alert.last_sent = alert.last.started;
  const std::map<std::string, ActiveAlert> active{{alert.last.key(), alert}};
  ASSERT_TRUE(save_alert_state(path, active));
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  auto loaded = load_alert_state(path);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->size(), 1u);
  const ActiveAlert& back = loaded->begin()->second;
  EXPECT_EQ(loaded->begin()->first, "filesystem_usage//data/critical");
  EXPECT_EQ(back.last.summary, alert.last.summary);
  EXPECT_EQ(back.last.started, alert.last.started);
  EXPECT_EQ(back.last.time, alert.last.time);
  EXPECT_EQ(back.last_sent, alert.last_sent);
  EXPECT_EQ(back.last.labels, alert.last.labels);
  EXPECT_EQ(back.last.action, alert.last.action);

  // Never written through a planted symlink.
  const auto target = dir / "target";
  std::ofstream(target) << "keep";
  std::filesystem::remove(path);
  std::filesystem::create_symlink(target, path.string() + ".tmp");
  ASSERT_TRUE(save_alert_state(path, active));
  std::ifstream kept(target);
  std::string text;
  kept >> text;
  EXPECT_EQ(text, "keep");
  std::filesystem::remove_all(dir);
}

TEST(AlertState, AMissingFileIsNoAlertAndGarbageIsAnError) {
  const auto dir = scratch_dir();
  auto missing = load_alert_state(dir / "none.json");
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->empty());
  std::ofstream(dir / "bad.json") << "{not json";
  auto bad = load_alert_state(dir / "bad.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("not a headroom alert state file"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace headroom::daemon
