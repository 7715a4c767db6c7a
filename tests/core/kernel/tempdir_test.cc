#include "core/kernel/tempdir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/scratch_root.h"

namespace headroom {
namespace {

using testing::FakeSyscalls;
using testing::ScratchRoot;

std::vector<std::string> paths(const std::vector<TempdirCandidate>& candidates) {
  std::vector<std::string> result;
  for (const TempdirCandidate& candidate : candidates) result.push_back(candidate.path.string());
  return result;
}

TEST(TempdirCandidates, FollowsPythonsOrder) {
  Context context;
  context.working_directory = "/home/user/job";
  context.environment = {{"TMP", "/scratch/tmp"}, {"TMPDIR", "/fast/tmp/"}, {"TEMP", ""}};
  const auto candidates = tempdir_candidates(context);
  // TEMP is empty, so Python's `if dirname` skips it; trailing slashes are normalised.
  EXPECT_EQ(paths(candidates),
            (std::vector<std::string>{"/fast/tmp", "/scratch/tmp", "/tmp", "/var/tmp", "/usr/tmp",
                                      "/home/user/job"}));
  EXPECT_EQ(candidates[0].origin, "TMPDIR");
  EXPECT_EQ(candidates[0].listed, "/fast/tmp/");
  EXPECT_EQ(candidates[1].origin, "TMP");
  EXPECT_EQ(candidates[5].origin, "cwd");
}

TEST(TempdirCandidates, MakesARelativeTmpdirAbsoluteAgainstTheJobsCwd) {
  Context context;
  context.working_directory = "/home/user/job";
  context.environment = {{"TMPDIR", "../scratch/./tmp"}};
  EXPECT_EQ(tempdir_candidates(context).front().path, "/home/user/scratch/tmp");
}

TEST(TempdirResolution, QuotesPythonsErrorMessage) {
  Context context;
  context.working_directory = "/srv";
  TempdirResolution resolution;
  resolution.candidates = tempdir_candidates(context);
  EXPECT_EQ(resolution.python_error(),
            "No usable temporary directory found in ['/tmp', '/var/tmp', '/usr/tmp', '/srv']");
  EXPECT_FALSE(resolution.chosen());
}

TEST(CandidateOutcome, DescribesTheFailingStep) {
  const CandidateOutcome full{{"/tmp", "/tmp", "default"}, ENOSPC, "write"};
  EXPECT_EQ(full.describe(), "No space left on device (errno 28) writing a test file");
  const CandidateOutcome read_only{{"/var/tmp", "/var/tmp", "default"}, EROFS, "create"};
  EXPECT_EQ(read_only.describe(), "Read-only file system (errno 30) creating a test file");
}

TEST(TryTempdir, WritesAndRemovesItsTestFile) {
  const ScratchRoot root("tmp_full_fallback");
  const auto outcome = try_tempdir(SysRoot(root.path()), {"/var/tmp", "/var/tmp", "default"});
  EXPECT_TRUE(outcome.usable()) << outcome.describe();
  EXPECT_EQ(root.entries("/var/tmp"), 1U);  // only the fixture's .keep
}

TEST(TryTempdir, SkipsMissingDirsAndFiles) {
  const ScratchRoot root("tmp_full_fallback");
  auto missing = try_tempdir(SysRoot(root.path()), {"/tmp", "/tmp", "default"});
  EXPECT_EQ(missing.error, ENOENT);
  EXPECT_EQ(missing.step, "create");
  auto file = try_tempdir(SysRoot(root.path()), {"/var/tmp/.keep", "/var/tmp/.keep", "TMPDIR"});
  EXPECT_EQ(file.error, ENOTDIR);
}

TEST(ResolveTempdir, StopsAtTheFirstUsableCandidate) {
  const ScratchRoot root("tmp_full_fallback");
  FakeSyscalls syscalls;
  Context context = root.context(syscalls);
  context.working_directory = "/";
  context.environment = {{"TMPDIR", "/does/not/exist"}};
  const TempdirResolution resolution = resolve_tempdir(context);
  ASSERT_EQ(resolution.tried.size(), 3U);  // $TMPDIR, /tmp (absent here), /var/tmp
  EXPECT_EQ(resolution.tried[0].error, ENOENT);
  ASSERT_TRUE(resolution.chosen());
  EXPECT_EQ(resolution.chosen()->path, "/var/tmp");
}

TEST(MultiprocessingSocketPathLength, AddsPympAndListenerNames) {
  // "/tmp/pymp-k3j2l1x9/listener-a8d7f6s5" is 36 bytes.
  EXPECT_EQ(multiprocessing_socket_path_length("/tmp"), 36U);
}

TEST(ProbeMultiprocessingSocket, BindsAndCleansUp) {
  const ScratchRoot root("tmp_full_fallback");
  const SocketProbe probe = probe_multiprocessing_socket(SysRoot(root.path()), "/var/tmp");
  EXPECT_TRUE(probe.ok()) << probe.step << ": " << probe.error;
  EXPECT_EQ(probe.python_path_length, 40U);
  EXPECT_EQ(root.entries("/var/tmp"), 1U);
}

TEST(ProbeMultiprocessingSocket, RefusesPathsPythonCannotBind) {
  const ScratchRoot root;
  const std::string long_dir = "/" + std::string(80, 'd');  // 81 + 32 > 107
  const SocketProbe probe = probe_multiprocessing_socket(SysRoot(root.path()), long_dir);
  EXPECT_FALSE(probe.ok());
  EXPECT_EQ(probe.step, "length");
  EXPECT_EQ(probe.python_path_length, 113U);
}

TEST(ProbeMultiprocessingSocket, ReportsAMissingDirAtMkdir) {
  const ScratchRoot root;
  const SocketProbe probe = probe_multiprocessing_socket(SysRoot(root.path()), "/tmp");
  EXPECT_EQ(probe.error, ENOENT);
  EXPECT_EQ(probe.step, "mkdir");
}

}  // namespace
}  // namespace headroom
