#include "core/supervise/rotating_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::read_text;

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
  EXPECT_EQ(read_text(path), "dddddddd\n");
  EXPECT_EQ(read_text(rotated_name(path, 1)), "cccccccc\n");
  EXPECT_EQ(read_text(rotated_name(path, 2)), "bbbbbbbb\n");
  EXPECT_FALSE(std::filesystem::exists(rotated_name(path, 3)));
}

TEST_F(RotatingLogTest, DropsAndCountsWhatDoesNotFitTheQueue) {
  auto log = RotatingLog::open({dir_ / "job.log", 1 << 20, 2, /*queue_bytes=*/0});
  ASSERT_TRUE(log);
  (*log)->write("lost");
  EXPECT_EQ((*log)->close().lost_bytes, 4u);
}

// A full disk under the log (ENOSPC) is tested end to end with a real tmpfs:
// tests/integration/test_run_safety.py. /dev/full is a device: refused now.
TEST_F(RotatingLogTest, RefusesADeviceAndASymlink) {
  if (std::filesystem::exists("/dev/full")) {
    auto device = RotatingLog::open({"/dev/full", 1 << 20, 1});
    ASSERT_FALSE(device);
    EXPECT_EQ(device.error().code, Error::Code::kPermissionDenied);
  }
  std::ofstream(dir_ / "victim") << "precious\n";
  std::filesystem::create_symlink(dir_ / "victim", dir_ / "job.log");
  EXPECT_FALSE(RotatingLog::open({dir_ / "job.log", 1 << 20, 2}));
  EXPECT_EQ(read_text(dir_ / "victim"), "precious\n");
}

TEST_F(RotatingLogTest, RotationRenamesAPlantedNameButNeverWritesThroughIt) {
  const auto path = dir_ / "job.log";
  std::ofstream(dir_ / "victim") << "precious\n";
  std::filesystem::create_symlink(dir_ / "victim", rotated_name(path, 1));
  auto log = RotatingLog::open({path, 10, 3});
  ASSERT_TRUE(log) << log.error().message;
  for (const char* chunk : {"aaaaaaaa\n", "bbbbbbbb\n", "cccccccc\n"}) (*log)->write(chunk);
  EXPECT_EQ((*log)->close().lost_bytes, 0u);
  EXPECT_EQ(read_text(dir_ / "victim"), "precious\n");
  EXPECT_EQ(read_text(path), "cccccccc\n");
  EXPECT_EQ(read_text(rotated_name(path, 1)), "bbbbbbbb\n");
  EXPECT_EQ(read_text(rotated_name(path, 2)), "aaaaaaaa\n");
  EXPECT_FALSE(std::filesystem::is_symlink(rotated_name(path, 2)));
}

TEST_F(RotatingLogTest, AFileThatReplacedOursIsNotRotatedAsOurs) {
  const auto path = dir_ / "job.log";
  auto log = RotatingLog::open({path, 10, 3});
  ASSERT_TRUE(log) << log.error().message;
  (*log)->write("aaaaaaaa\n");
  // Wait for the writer, then someone else moves ours away and puts a symlink there.
  for (int i = 0; i < 200 && read_text(path).empty(); ++i) ::usleep(5000);
  std::filesystem::rename(path, dir_ / "moved.log");
  std::ofstream(dir_ / "victim") << "precious\n";
  std::filesystem::create_symlink(dir_ / "victim", path);
  (*log)->write("bbbbbbbb\n");  // rotates: FILE is not ours, so nothing is renamed or opened
  const RotatingLogStats stats = (*log)->close();
  EXPECT_EQ(stats.lost_bytes, 9u);
  EXPECT_NE(stats.last_error.find("symbolic link"), std::string::npos) << stats.last_error;
  EXPECT_EQ(read_text(dir_ / "victim"), "precious\n");
  EXPECT_TRUE(std::filesystem::is_symlink(path));
  EXPECT_FALSE(std::filesystem::exists(rotated_name(path, 1)));
}

TEST_F(RotatingLogTest, KeepingOneFileEmptiesItInPlace) {
  const auto path = dir_ / "job.log";
  auto log = RotatingLog::open({path, 10, 1});
  ASSERT_TRUE(log);
  for (const char* chunk : {"aaaaaaaa\n", "bbbbbbbb\n"}) (*log)->write(chunk);
  EXPECT_EQ((*log)->close().rotations, 1u);
  EXPECT_EQ(read_text(path), "bbbbbbbb\n");
}

TEST(RotatedName, NumbersOlderFiles) {
  EXPECT_EQ(rotated_name("/l/job.log", 0), "/l/job.log");
  EXPECT_EQ(rotated_name("/l/job.log", 2), "/l/job.log.2");
}

}  // namespace
}  // namespace headroom
