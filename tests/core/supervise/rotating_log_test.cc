#include "core/supervise/rotating_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace headroom {
namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class RotatingLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::current_path() /  // the build tree, not the host's /tmp
           ("headroom-log-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RotatingLogTest, RotatesAtTheSizeCapAndKeepsTheNewestFiles) {
  const auto path = dir_ / "job.log";
  auto log = RotatingLog::open({path, 10, 3});
  ASSERT_TRUE(log) << log.error().message;
  for (const char* chunk : {"aaaaaaaa\n", "bbbbbbbb\n", "cccccccc\n", "dddddddd\n"})
    (*log)->write(chunk);
  const RotatingLogStats stats = (*log)->close();
  EXPECT_EQ(stats.lost_bytes, 0u);
  EXPECT_EQ(stats.written_bytes, 36u);
  EXPECT_EQ(slurp(path), "dddddddd\n");
  EXPECT_EQ(slurp(rotated_name(path, 1)), "cccccccc\n");
  EXPECT_EQ(slurp(rotated_name(path, 2)), "bbbbbbbb\n");
  EXPECT_FALSE(std::filesystem::exists(rotated_name(path, 3)));
}

TEST_F(RotatingLogTest, DropsAndCountsWhatDoesNotFitTheQueue) {
  auto log = RotatingLog::open({dir_ / "job.log", 1 << 20, 2, /*queue_bytes=*/0});
  ASSERT_TRUE(log);
  (*log)->write("lost");
  EXPECT_EQ((*log)->close().lost_bytes, 4u);
}

TEST_F(RotatingLogTest, CountsBytesAFullDeviceRefused) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  // /dev/full fails every write with ENOSPC, like a full checkpoint disk.
  auto log = RotatingLog::open({"/dev/full", 1 << 20, 1});
  ASSERT_TRUE(log) << log.error().message;
  (*log)->write("0123456789");
  const RotatingLogStats stats = (*log)->close();
  EXPECT_EQ(stats.lost_bytes, 10u);
  EXPECT_NE(stats.last_error.find("No space left"), std::string::npos) << stats.last_error;
}

TEST(RotatedName, NumbersOlderFiles) {
  EXPECT_EQ(rotated_name("/l/job.log", 0), "/l/job.log");
  EXPECT_EQ(rotated_name("/l/job.log", 2), "/l/job.log.2");
}

}  // namespace
}  // namespace headroom
