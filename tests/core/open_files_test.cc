// OpenFiles: pseudo-files stay open and each read is fresh; regular files are
// read anew every time (a fixture replaced by rename must be seen).

#include "core/open_files.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>
#include <thread>

#include "core/sys_root.h"

namespace headroom {
namespace {

/// `count` one-page mappings of this process, kept apart by alternating protections: each
/// is a line of /proc/self/maps while this lives.
class Mappings {
 public:
  explicit Mappings(int count)
      : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))),
        size_(page_ * static_cast<std::size_t>(count) * 2),
        area_(static_cast<char*>(
            ::mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    if (area_ == MAP_FAILED) return;
    for (std::size_t index = 0; index < size_ / page_; index += 2) {
      ::mprotect(area_ + index * page_, page_, PROT_READ);
    }
  }
  ~Mappings() {
    if (ok()) ::munmap(area_, size_);
  }
  Mappings(const Mappings&) = delete;
  Mappings& operator=(const Mappings&) = delete;
  [[nodiscard]] bool ok() const { return area_ != MAP_FAILED; }
  [[nodiscard]] std::size_t page() const { return page_; }
  /// Where the index-th readable page starts.
  [[nodiscard]] std::uintptr_t start(int index) const {
    return reinterpret_cast<std::uintptr_t>(area_ + static_cast<std::size_t>(index) * 2 * page_);
  }

 private:
  std::size_t page_;
  std::size_t size_;
  char* area_;
};

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
  constexpr int kMappings = 300;
  std::optional<std::string> after;
  {
    const Mappings mappings(kMappings);
    ASSERT_TRUE(mappings.ok());
    auto read = files.read("/proc/self/maps", 1 << 20);
    ASSERT_TRUE(read);
    after = *read;
    for (int index = 0; index < kMappings; ++index) {
      EXPECT_NE(after->find(fmt::format("{:x}-", mappings.start(index))), std::string::npos)
          << index;
    }
  }
  EXPECT_EQ(files.size(), 1U);
  EXPECT_GT(after->size(), before->size() + 10000);
}

// FileEnd::kShortRead ends at the first read that returns less than asked: right for a file
// the kernel writes in one piece (meminfo: every line, in one read), wrong for one written
// record by record (maps: a seq_file hands over at most a page's worth of records a read).
TEST(OpenFiles, AShortReadEndsOnlyAFileAskedToEndThere) {
  OpenFiles files;
  const auto lines = [](const std::string& text) {
    return std::count(text.begin(), text.end(), '\n');
  };
  auto meminfo = files.read("/proc/meminfo", 1 << 20, FileEnd::kShortRead);
  auto meminfo_to_end = files.read("/proc/meminfo", 1 << 20);
  ASSERT_TRUE(meminfo && meminfo_to_end) << meminfo.error().message;
  EXPECT_GT(lines(*meminfo), 20);
  EXPECT_EQ(lines(*meminfo), lines(*meminfo_to_end));
  EXPECT_EQ(meminfo->back(), '\n');

  // Enough mappings that maps is several pages long.
  const Mappings mappings(200);
  ASSERT_TRUE(mappings.ok());
  OpenFiles fresh;
  auto whole = fresh.read("/proc/self/maps", 1 << 20);
  auto first_piece = fresh.read("/proc/self/maps", 1 << 20, FileEnd::kShortRead);
  ASSERT_TRUE(whole && first_piece);
  EXPECT_GT(whole->size(), 3 * mappings.page());
  EXPECT_LE(first_piece->size(), mappings.page());
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
