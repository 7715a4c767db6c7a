#include "core/prune/removal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/fake_syscalls.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class RemovalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch_.path() / "ckpts";
    outside_ = scratch_.path() / "outside";
    write_file(outside_ / "precious", "keep");
    for (const char* name : {"checkpoint-1", "checkpoint-2"}) {
      write_file(dir_ / name / "model.safetensors", "weights");
      write_file(dir_ / name / "sub" / "optimizer.pt", "state");
    }
    // Symlinks inside a checkpoint are removed as links, never followed.
    fs::create_directory_symlink(outside_, dir_ / "checkpoint-1" / "escape");
    fs::create_symlink(outside_ / "precious", dir_ / "checkpoint-1" / "sub" / "file-link");
    context_.syscalls = &syscalls_;
  }

  Result<CheckpointScan> scan() {
    CheckpointScanOptions options;
    options.dir = dir_;
    options.settle = std::chrono::milliseconds(0);
    options.in_use = false;
    return scan_checkpoints(context_, options);
  }

  testing::ScratchRoot scratch_;
  testing::FakeSyscalls syscalls_;
  Context context_;
  fs::path dir_;
  fs::path outside_;
};

TEST_F(RemovalTest, RemovesWholeTreesWithoutFollowingSymlinks) {
  auto scanned = scan();
  ASSERT_TRUE(scanned) << scanned.error().message;
  ASSERT_EQ(scanned->checkpoints.size(), 2u);
  std::vector<std::size_t> indices = {0, 1};
  auto outcomes = remove_checkpoints(context_, *scanned, indices, HolderRecheck::kSkip);
  ASSERT_TRUE(outcomes) << outcomes.error().message;
  for (const RemovalOutcome& outcome : *outcomes) {
    EXPECT_EQ(outcome.status, RemovalStatus::kRemoved) << outcome.reason;
    EXPECT_GT(outcome.freed_bytes, 0u);
  }
  EXPECT_TRUE(fs::is_empty(dir_));
  EXPECT_TRUE(fs::exists(outside_ / "precious"));
}

TEST_F(RemovalTest, SkipsADirectorySwappedForASymlinkAfterThePlan) {
  auto scanned = scan();
  ASSERT_TRUE(scanned);
  std::size_t victim = scanned->checkpoints[0].name == "checkpoint-2" ? 0 : 1;
  // The race that gave tmp cleaners their CVEs: replace the planned directory
  // by a symlink to somewhere else between plan and removal.
  fs::rename(dir_ / "checkpoint-2", scratch_.path() / "moved-away");
  fs::create_directory_symlink(outside_, dir_ / "checkpoint-2");
  auto outcomes = remove_checkpoints(context_, *scanned, {victim}, HolderRecheck::kSkip);
  ASSERT_TRUE(outcomes);
  ASSERT_EQ(outcomes->size(), 1u);
  EXPECT_EQ(outcomes->front().status, RemovalStatus::kSkipped);
  EXPECT_NE(outcomes->front().reason.find("replaced since the plan"), std::string::npos);
  EXPECT_TRUE(fs::exists(outside_ / "precious"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "checkpoint-2"));
}

TEST_F(RemovalTest, SkipsACheckpointThatChangedSinceThePlan) {
  auto scanned = scan();
  ASSERT_TRUE(scanned);
  write_file(dir_ / "checkpoint-1" / "sub" / "optimizer.pt", "state grew after the plan");
  std::size_t victim = scanned->checkpoints[0].name == "checkpoint-1" ? 0 : 1;
  auto outcomes = remove_checkpoints(context_, *scanned, {victim}, HolderRecheck::kSkip);
  ASSERT_TRUE(outcomes);
  EXPECT_EQ(outcomes->front().status, RemovalStatus::kSkipped);
  EXPECT_NE(outcomes->front().reason.find("changed since the plan"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "checkpoint-1" / "model.safetensors"));
}

TEST_F(RemovalTest, RefusesWhenTheDirectoryItselfWasReplaced) {
  auto scanned = scan();
  ASSERT_TRUE(scanned);
  fs::rename(dir_, scratch_.path() / "old-ckpts");
  fs::create_directory_symlink(outside_, dir_);
  auto outcomes = remove_checkpoints(context_, *scanned, {0, 1}, HolderRecheck::kSkip);
  EXPECT_FALSE(outcomes);
  EXPECT_TRUE(fs::exists(outside_ / "precious"));
  EXPECT_TRUE(fs::exists(scratch_.path() / "old-ckpts" / "checkpoint-1" / "model.safetensors"));
}

}  // namespace
}  // namespace headroom
