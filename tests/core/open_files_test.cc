// OpenFiles: pseudo-files stay open and each read is fresh; regular files are
// read anew every time (a fixture replaced by rename must be seen).

#include "core/open_files.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
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

TEST(OpenFiles, AKeptFileThatGrewFarBeyondItsLastSizeIsReadWhole) {
  // Each read asks for about the size seen last time: one that comes back full goes on.
  // /proc/self/maps grows by a line for each of these mappings (alternating protections
  // keep them apart), far past what the first read returned.
  OpenFiles files;
  auto before = files.read("/proc/self/maps", 1 << 20);
  ASSERT_TRUE(before) << before.error().message;
  const long page = ::sysconf(_SC_PAGESIZE);
  constexpr int kMappings = 300;
  char* area = static_cast<char*>(::mmap(nullptr, static_cast<std::size_t>(page) * kMappings * 2,
                                         PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(area, MAP_FAILED);
  for (int index = 0; index < kMappings * 2; index += 2) {
    ASSERT_EQ(::mprotect(area + index * page, static_cast<std::size_t>(page), PROT_READ), 0);
  }
  auto after = files.read("/proc/self/maps", 1 << 20);
  ::munmap(area, static_cast<std::size_t>(page) * kMappings * 2);
  ASSERT_TRUE(after);
  EXPECT_EQ(files.size(), 1U);
  EXPECT_GT(after->size(), before->size() + 10000);
  for (int index = 0; index < kMappings * 2; index += 2) {
    const auto start = reinterpret_cast<std::uintptr_t>(area + index * page);
    EXPECT_NE(after->find(fmt::format("{:x}-", start)), std::string::npos) << index;
  }
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
