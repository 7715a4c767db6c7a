#include "core/safe_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::read_text;

void put(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

void write_text(const UniqueFd& fd, const std::string& text) {
  ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

class SafeOutputTest : public ::testing::Test {
 protected:
  testing::ScratchRoot scratch_;
  std::filesystem::path dir() const { return scratch_.path(); }
  std::filesystem::path victim() const { return scratch_.path() / "victim"; }
  void SetUp() override { put(victim(), "precious\n"); }
};

TEST_F(SafeOutputTest, CreatesWithTheModeAskedForAndAppends) {
  const mode_t old_umask = ::umask(022);
  auto first = open_output(dir() / "job.log", ExistingFile::kAppend, 0640);
  ::umask(old_umask);
  ASSERT_TRUE(first) << first.error().message;
  write_text(*first, "one\n");
  auto second = open_output(dir() / "job.log", ExistingFile::kAppend, 0640);
  ASSERT_TRUE(second) << second.error().message;
  write_text(*second, "two\n");
  EXPECT_EQ(read_text(dir() / "job.log"), "one\ntwo\n");
  struct stat info {};
  ASSERT_EQ(::stat((dir() / "job.log").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
}

TEST_F(SafeOutputTest, TruncatesOnlyAfterTheChecks) {
  put(dir() / "report.json", "old report that is longer\n");
  auto file = open_output(dir() / "report.json", ExistingFile::kTruncate, 0600);
  ASSERT_TRUE(file) << file.error().message;
  write_text(*file, "{}\n");
  EXPECT_EQ(read_text(dir() / "report.json"), "{}\n");
  // A symlink to a victim is refused before anything is truncated.
  std::filesystem::create_symlink(victim(), dir() / "link.json");
  auto refused = open_output(dir() / "link.json", ExistingFile::kTruncate, 0600);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Error::Code::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("symbolic link"), std::string::npos);
  EXPECT_EQ(read_text(victim()), "precious\n");
}

TEST_F(SafeOutputTest, RefusesADanglingSymlinkInsteadOfCreatingItsTarget) {
  std::filesystem::create_symlink(dir() / "created-through-link", dir() / "job.log");
  auto refused = open_output(dir() / "job.log", ExistingFile::kAppend, 0640);
  ASSERT_FALSE(refused);
  EXPECT_FALSE(std::filesystem::exists(dir() / "created-through-link"));
}

TEST_F(SafeOutputTest, RefusesAHardLinkToAnotherFile) {
  std::filesystem::create_hard_link(victim(), dir() / "job.log");
  auto refused = open_output(dir() / "job.log", ExistingFile::kAppend, 0640);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("2 hard links"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(read_text(victim()), "precious\n");
}

TEST_F(SafeOutputTest, RefusesAFifoWithoutBlockingWithOrWithoutAReader) {
  const auto fifo = dir() / "job.log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  auto no_reader =
      open_output(fifo, ExistingFile::kAppend, 0640);  // would block without O_NONBLOCK
  ASSERT_FALSE(no_reader);
  EXPECT_NE(no_reader.error().message.find("FIFO"), std::string::npos);
  const UniqueFd reader(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(reader.ok());
  auto with_reader = open_output(fifo, ExistingFile::kAppend, 0640);
  ASSERT_FALSE(with_reader);
  EXPECT_NE(with_reader.error().message.find("FIFO"), std::string::npos);
}

TEST_F(SafeOutputTest, RefusesADeviceNodeWithoutOpeningIt) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  auto refused = open_output("/dev/full", ExistingFile::kAppend, 0640);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("character device"), std::string::npos);
}

TEST_F(SafeOutputTest, RefusesAnotherUsersFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another uid";
  put(dir() / "theirs.log", "theirs\n");
  ASSERT_EQ(::chown((dir() / "theirs.log").c_str(), 65534, 65534), 0);
  auto refused = open_output(dir() / "theirs.log", ExistingFile::kAppend, 0640);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("belongs to uid 65534"), std::string::npos);
  EXPECT_EQ(read_text(dir() / "theirs.log"), "theirs\n");
}

TEST_F(SafeOutputTest, CreateOnlyRefusesAnExistingName) {
  put(dir() / "job.log", "planted\n");
  auto dir_fd = open_output_dir(dir());
  ASSERT_TRUE(dir_fd);
  auto refused = open_output_at(dir_fd->get(), "job.log", ExistingFile::kRefuse, 0640, "job.log");
  ASSERT_FALSE(refused);
  EXPECT_EQ(read_text(dir() / "job.log"), "planted\n");
}

TEST_F(SafeOutputTest, CheckAcceptsAnAbsentNameAndCreatesNothing) {
  auto dir_fd = open_output_dir(dir());
  ASSERT_TRUE(dir_fd);
  EXPECT_TRUE(check_output_at(dir_fd->get(), "report.json", "report.json"));
  EXPECT_FALSE(std::filesystem::exists(dir() / "report.json"));
  std::filesystem::create_symlink(victim(), dir() / "report.json");
  EXPECT_FALSE(check_output_at(dir_fd->get(), "report.json", "report.json"));
  EXPECT_FALSE(check_output_at(dir_fd->get(), "../x", "../x"));
}

TEST_F(SafeOutputTest, TheDirectoryFdOutlivesASwapOfItsPath) {
  std::filesystem::create_directories(dir() / "logs");
  std::filesystem::create_directories(dir() / "elsewhere");
  auto dir_fd = open_output_dir(dir() / "logs");
  ASSERT_TRUE(dir_fd);
  std::filesystem::rename(dir() / "logs", dir() / "moved");
  std::filesystem::create_directory_symlink(dir() / "elsewhere", dir() / "logs");
  auto file = open_output_at(dir_fd->get(), "job.log", ExistingFile::kAppend, 0640, "logs/job.log");
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_TRUE(std::filesystem::exists(dir() / "moved" / "job.log"));
  EXPECT_FALSE(std::filesystem::exists(dir() / "elsewhere" / "job.log"));
  EXPECT_TRUE(names_open_file(dir_fd->get(), "job.log", file->get()));
}

/// write_all: everything through a pipe that takes it in pieces, and a full disk named.
TEST(WriteAll, WritesEverythingOrSaysWhyNot) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text(200'000, 'x');  // more than a pipe holds: several short writes
  std::string read_back;
  std::thread reader([&] {
    char buffer[65536];
    ssize_t got = 0;
    while ((got = ::read(fds[0], buffer, sizeof buffer)) > 0) {
      read_back.append(buffer, static_cast<std::size_t>(got));
    }
  });
  const auto written = write_all(fds[1], text, "pipe");
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(read_back, text);

  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(full, 0);
  const auto refused = write_all(full, "report", "/ckpt/report.json");
  ::close(full);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "/ckpt/report.json: No space left on device");
}

}  // namespace
}  // namespace headroom
