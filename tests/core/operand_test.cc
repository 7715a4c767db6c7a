// Command-line operands: a symlink given on the command line is resolved as the host sees
// it (du -H, fuser), under the root prefix; relative, absolute, chained and ".." targets.

#include "core/operand.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/fake_syscalls.h"
#include "core/scratch_root.h"

namespace headroom {
namespace {

namespace fs = std::filesystem;

class OperandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path root = scratch_.path();
    fs::create_directories(root / "scratch/run7/outputs/checkpoint-1");
    fs::create_directories(root / "home/me");
    fs::create_directories(root / "data");
    // outputs -> /scratch/run7/outputs: absolute, so re-rooted under the prefix.
    fs::create_symlink("/scratch/run7/outputs", root / "home/me/outputs");
    // latest -> outputs/checkpoint-1: relative, through another link.
    fs::create_symlink("outputs/checkpoint-1", root / "home/me/latest");
    // up -> ../../data: ".." applied after the link.
    fs::create_symlink("../../data", root / "home/me/up");
    fs::create_symlink("loop-b", root / "home/me/loop-a");
    fs::create_symlink("loop-a", root / "home/me/loop-b");
    fs::create_symlink("/nowhere", root / "home/me/dangling");
    context_ = scratch_.context(syscalls_);
    context_.working_directory = "/home/me";
  }

  testing::ScratchRoot scratch_;
  testing::FakeSyscalls syscalls_;
  Context context_;
};

TEST_F(OperandTest, AbsoluteLinkIsReRootedAndSaidSo) {
  auto operand = resolve_operand(context_, "outputs/");
  ASSERT_TRUE(operand) << operand.error().message;
  EXPECT_EQ(operand->given, "/home/me/outputs");
  EXPECT_EQ(operand->path, "/scratch/run7/outputs");
  EXPECT_TRUE(operand->followed());
  EXPECT_EQ(operand->note(),
            "/home/me/outputs -> /scratch/run7/outputs (a symlink on the command line is "
            "followed, as du -H does)");
}

TEST_F(OperandTest, ChainedRelativeAndDotDotLinks) {
  auto latest = resolve_operand(context_, "/home/me/latest");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->path, "/scratch/run7/outputs/checkpoint-1");
  auto up = resolve_operand(context_, "up");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->path, "/data");
  auto through = resolve_operand(context_, "outputs/../outputs/checkpoint-1");
  ASSERT_TRUE(through);  // lexically "outputs/checkpoint-1": still through the link
  EXPECT_EQ(through->path, "/scratch/run7/outputs/checkpoint-1");
}

TEST_F(OperandTest, PlainDirectoriesAndTheWorkingDirectoryAreUnchanged) {
  auto plain = resolve_operand(context_, "/scratch/run7");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->followed());
  EXPECT_EQ(plain->note(), "");
  auto here = resolve_operand(context_, "");
  ASSERT_TRUE(here);
  EXPECT_EQ(here->path, "/home/me");
}

TEST_F(OperandTest, LoopsAndDanglingLinksAreErrorsNamingThePath) {
  auto loop = resolve_operand(context_, "loop-a");
  ASSERT_FALSE(loop);
  EXPECT_NE(loop.error().message.find("Too many levels of symbolic links"), std::string::npos)
      << loop.error().message;
  auto dangling = resolve_operand(context_, "dangling");
  ASSERT_FALSE(dangling);
  EXPECT_NE(dangling.error().message.find("/nowhere"), std::string::npos)
      << dangling.error().message;
  EXPECT_EQ(dangling.error().code, Error::Code::kNotFound);
}

/// check --dir and the Python module's dirs= go through this one rule.
TEST(JobDirs, AbsoluteNormalizedAndEachADirectory) {
  testing::ScratchRoot scratch;
  const fs::path cwd = scratch.path();
  fs::create_directories(cwd / "ckpt/run1");
  fs::create_symlink("ckpt/run1", cwd / "latest");
  { std::ofstream(cwd / "train.log") << "x"; }
  auto dirs = resolve_job_dirs({"ckpt/./run1/", "latest", (cwd / "ckpt").string()}, cwd);
  ASSERT_TRUE(dirs) << dirs.error().message;
  EXPECT_EQ(*dirs, (std::vector<fs::path>{cwd / "ckpt/run1/", cwd / "latest", cwd / "ckpt"}));
  auto none = resolve_job_dirs({}, cwd);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, std::vector<fs::path>{cwd});

  auto missing = resolve_job_dirs({"ckpt", "nope"}, cwd);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::kNotFound);
  EXPECT_EQ(missing.error().message, "nope: No such file or directory");
  auto file = resolve_job_dirs({"train.log"}, cwd);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code, Error::Code::kInvalidArgument);
  EXPECT_EQ(file.error().message, "train.log: not a directory");
}

}  // namespace
}  // namespace headroom
