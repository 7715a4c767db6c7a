// OpenFiles: pseudo-files stay open and each read is fresh; regular files are
// read anew every time (a fixture replaced by rename must be seen).

#include "core/open_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "core/sys_root.h"

namespace headroom {
namespace {

TEST(OpenFiles, AKeptProcFileIsReadFreshEveryTime) {
  OpenFiles files;
  auto first = files.read("/proc/uptime", 4096);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(files.size(), 1U);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto second = files.read("/proc/uptime", 4096);
  ASSERT_TRUE(second);
  EXPECT_EQ(files.size(), 1U);  // the same fd
  EXPECT_NE(*first, *second);   // uptime moved on: regenerated, not cached text
}

TEST(OpenFiles, ARegularFileIsNotKept) {
  const auto path = std::filesystem::current_path() / "open_files_test.txt";
  std::ofstream(path) << "one";
  OpenFiles files;
  EXPECT_EQ(*files.read(path, 4096), "one");
  EXPECT_EQ(files.size(), 0U);
  const auto replacement = std::filesystem::current_path() / "open_files_test.new";
  std::ofstream(replacement) << "two";
  std::filesystem::rename(replacement, path);
  EXPECT_EQ(*files.read(path, 4096), "two");
  std::filesystem::remove(path);
}

TEST(OpenFiles, SysRootReadsThroughTheScopedFilesOnly) {
  OpenFiles files;
  const SysRoot root("/");
  {
    const ScopedOpenFiles scope(&files);
    ASSERT_TRUE(root.read(root.proc("meminfo")));
    EXPECT_EQ(files.size(), 1U);
  }
  ASSERT_TRUE(root.read(root.proc("vmstat")));
  EXPECT_EQ(files.size(), 1U);  // outside the scope: a plain open/read/close
  EXPECT_EQ(current_open_files(), nullptr);
}

TEST(OpenFiles, AMissingFileIsAnErrorNamingIt) {
  OpenFiles files;
  auto missing = files.read("/proc/headroom-no-such-file", 4096);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("headroom-no-such-file"), std::string::npos);
}

}  // namespace
}  // namespace headroom
