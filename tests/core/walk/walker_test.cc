#include "core/walk/walker.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <thread>

#include "core/scratch_root.h"

namespace headroom::walk {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, std::size_t bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << std::string(bytes, 'x');
}

/// What `du -s --block-size=1` computes, independently: lstat of every entry, inodes once.
std::uint64_t reference_disk_bytes(const fs::path& root) {
  std::set<std::pair<dev_t, ino_t>> seen;
  std::uint64_t total = 0;
  auto add = [&](const fs::path& path) {
    struct stat raw {};
    ASSERT_EQ(::lstat(path.c_str(), &raw), 0) << path;
    if (seen.insert({raw.st_dev, raw.st_ino}).second)
      total += static_cast<std::uint64_t>(raw.st_blocks) * 512;
  };
  add(root);
  for (const auto& entry : fs::recursive_directory_iterator(root)) add(entry.path());
  return total;
}

const TopEntry* entry_named(const WalkResult& result, std::string_view name) {
  for (const TopEntry& entry : result.entries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

class WalkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = scratch_.path() / "tree";
    for (int dir = 0; dir < 6; ++dir) {
      for (int sub = 0; sub < 5; ++sub) {
        for (int file = 0; file < 20; ++file) {
          write_file(root_ / ("d" + std::to_string(dir)) / ("s" + std::to_string(sub)) /
                         ("f" + std::to_string(file)),
                     static_cast<std::size_t>(100 * (file + 1) * (dir + 1)));
        }
      }
    }
    write_file(root_ / "top.bin", 50000);
  }
  testing::ScratchRoot scratch_;
  fs::path root_;
};

TEST_F(WalkerTest, TotalsMatchAnIndependentLstatSum) {
  for (unsigned threads : {1U, 2U, 8U}) {
    WalkOptions options;
    options.threads = threads;
    auto result = walk(root_, options);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->total.disk_bytes, reference_disk_bytes(root_)) << threads << " threads";
    EXPECT_EQ(result->total.files, 6u * 5 * 20 + 1);
    EXPECT_EQ(result->total.directories, 1u + 6 + 6 * 5);
    EXPECT_EQ(result->entries.size(), 7u);
    EXPECT_EQ(result->unreadable, 0u);
  }
}

TEST_F(WalkerTest, SumsEachTopLevelEntrySeparately) {
  auto result = walk(root_, {});
  ASSERT_TRUE(result);
  const TopEntry* d5 = entry_named(*result, "d5");
  ASSERT_NE(d5, nullptr);
  EXPECT_EQ(d5->tally.files, 100u);
  EXPECT_EQ(d5->tally.directories, 6u);
  std::uint64_t file_bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root_ / "d5")) {
    if (entry.is_regular_file()) file_bytes += entry.file_size();
  }
  EXPECT_EQ(file_bytes, 5u * 6 * 100 * (20 * 21 / 2));
  EXPECT_GE(d5->tally.apparent_bytes, file_bytes);  // plus the directories' own sizes
  EXPECT_EQ(d5->tally.disk_bytes, reference_disk_bytes(root_ / "d5"));
  EXPECT_EQ(entry_named(*result, "top.bin")->tally.apparent_bytes, 50000u);
}

TEST_F(WalkerTest, CountsHardLinksOnceAndNeverFollowsSymlinks) {
  write_file(scratch_.path() / "outside" / "big", 1 << 20);
  fs::create_directory_symlink(scratch_.path() / "outside", root_ / "link");
  fs::create_hard_link(root_ / "top.bin", root_ / "d0" / "again.bin");
  auto result = walk(root_, {});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->total.disk_bytes, reference_disk_bytes(root_));
  EXPECT_EQ(result->hard_links_skipped, 1u);
  const TopEntry* link = entry_named(*result, "link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->stat.kind, FileKind::kSymlink);
  EXPECT_LT(link->tally.apparent_bytes, 4096u);  // the link itself, not the 1 MiB behind it
}

TEST_F(WalkerTest, FoldsTopLevelFilesBeyondKeepFiles) {
  for (int i = 0; i < 10; ++i) write_file(root_ / ("small" + std::to_string(i)), 10);
  WalkOptions options;
  options.keep_files = 2;
  auto result = walk(root_, options);
  ASSERT_TRUE(result);
  EXPECT_NE(entry_named(*result, "top.bin"), nullptr);  // the largest file is kept
  EXPECT_EQ(result->folded_count, 9u);                  // 11 files, 2 kept
  EXPECT_EQ(result->entries.size(), 6u + 2);
}

TEST_F(WalkerTest, ReportsWatchedFilesUnderTheirTopLevelEntry) {
  struct stat raw {};
  ASSERT_EQ(::lstat((root_ / "d3" / "s1" / "f7").c_str(), &raw), 0);
  FileIdSet watch{{raw.st_dev, raw.st_ino}};
  WalkOptions options;
  options.watch = &watch;
  auto result = walk(root_, options);
  ASSERT_TRUE(result);
  EXPECT_EQ(entry_named(*result, "d3")->watched_count, 1u);
  EXPECT_EQ(entry_named(*result, "d2")->watched_count, 0u);
}

// du publishes its watch set from the /proc scan while the walk runs: ids met
// before then are kept and checked later, so the answer is the one a set known
// from the start gives, for files deep down and for the top-level entries.
TEST_F(WalkerTest, AWatchSetPublishedDuringTheWalkFindsTheSameFiles) {
  struct stat deep {};
  struct stat top {};
  struct stat dir {};
  ASSERT_EQ(::lstat((root_ / "d3" / "s1" / "f7").c_str(), &deep), 0);
  ASSERT_EQ(::lstat((root_ / "top.bin").c_str(), &top), 0);
  ASSERT_EQ(::lstat((root_ / "d1").c_str(), &dir), 0);
  const FileIdSet watch{
      {deep.st_dev, deep.st_ino}, {top.st_dev, top.st_ino}, {dir.st_dev, dir.st_ino}};
  for (unsigned threads : {1U, 4U}) {
    for (const bool late : {false, true}) {
      PendingWatch pending;
      WalkProgress progress;
      WalkOptions options;
      options.threads = threads;
      options.pending_watch = &pending;
      options.progress = &progress;
      // Published at once, or only once the walk has counted every directory
      // below the top level (the workers hold every id until then).
      std::thread publisher([&] {
        if (late) {
          while (progress.directories.load() < 6u + 6 * 5) std::this_thread::yield();
        }
        pending.publish(&watch);
      });
      auto result = walk(root_, options);
      publisher.join();
      ASSERT_TRUE(result);
      EXPECT_EQ(entry_named(*result, "d3")->watched_count, 1u) << threads << late;
      EXPECT_EQ(entry_named(*result, "d2")->watched_count, 0u) << threads << late;
      EXPECT_EQ(entry_named(*result, "top.bin")->watched_count, 1u) << threads << late;
      EXPECT_EQ(entry_named(*result, "d1")->watched_count, 1u) << threads << late;
      ASSERT_EQ(entry_named(*result, "d3")->watched.size(), 1u);
      EXPECT_EQ(entry_named(*result, "d3")->watched[0].ino, deep.st_ino);
    }
  }
}

TEST_F(WalkerTest, ANullPendingWatchWatchesNothing) {
  PendingWatch pending;
  pending.publish(nullptr);
  WalkOptions options;
  options.pending_watch = &pending;
  auto result = walk(root_, options);
  ASSERT_TRUE(result);
  for (const TopEntry& entry : result->entries) EXPECT_EQ(entry.watched_count, 0u) << entry.name;
}

TEST_F(WalkerTest, ReportsProgress) {
  WalkProgress progress;
  WalkOptions options;
  options.progress = &progress;
  ASSERT_TRUE(walk(root_, options));
  EXPECT_EQ(progress.entries.load(), 6u * 5 * 20 + 6 * 5);  // below the top level
  EXPECT_EQ(progress.directories.load(), 6u + 6 * 5);
}

TEST(Walk, FailsOnAMissingRootAndTreatsAFileRootAsOneEntry) {
  EXPECT_FALSE(walk("/nonexistent/headroom-walk", {}));
  testing::ScratchRoot scratch;
  write_file(scratch.path() / "one", 3000);
  auto result = walk(scratch.path() / "one", {});
  ASSERT_TRUE(result);
  ASSERT_EQ(result->entries.size(), 1u);
  EXPECT_EQ(result->total.apparent_bytes, 3000u);
}

}  // namespace
}  // namespace headroom::walk
